"""Found by a breaker helper (2026-12-06, malformed input): a record in the reuse store
(``--hermes-reuse``) of another shape (hand-written, damaged, another version's) ended the sweep
of its container in a traceback (``ValueError: could not convert string to float: 'x'`` for an
``idle_timeout`` of ``"x"``; ``TypeError`` for a ``touched_at`` that is a list), and a run's claim
alike; one whose container id was a path (``../x``) had a claim write its record outside the store.
Such a record is skipped, as an unreadable one is: its container is judged as one with no record.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.reuse import ReuseStore

GOOD = "c" * 64


@pytest.mark.parametrize("fields", [{"idle_timeout": "x"}, {"touched_at": [1]}, {"idle_timeout": True},
                                    {"resource": [1]}, {"claim": "run"}, {"container_id": "../x"}],
                         ids=["idle_timeout", "touched_at", "bool", "resource", "claim", "path"])
def test_the_store_reads_the_good_records_alone(tmp_path: Path, fields: dict) -> None:
    store_dir = tmp_path / "reuse"
    store_dir.mkdir(mode=0o700)
    base = {"container_id": GOOD, "role": "docker", "key": "k", "image": "i", "image_id": "sha256:1",
            "resource": {}, "claim": None, "touched_at": time.time() - 7200, "idle_timeout": 60.0}
    (store_dir / f"{GOOD}.json").write_text(json.dumps(base), encoding="utf-8")
    bad_id = "d" * 64
    (store_dir / f"{bad_id}.json").write_text(json.dumps({**base, "container_id": bad_id, **fields}), encoding="utf-8")
    store = ReuseStore(path=str(store_dir))

    assert store.take(bad_id, reused=False, image_id_now=lambda image: "sha256:1", dry_run=True) is None
    assert store.take(GOOD, reused=False, image_id_now=lambda image: "sha256:1", dry_run=True) == "expired"
    assert [r["container_id"] for r in store.records()] == [GOOD]
    assert {f"{GOOD}.json", f"{bad_id}.json"} <= set(os.listdir(store_dir))  # (a dry run)
