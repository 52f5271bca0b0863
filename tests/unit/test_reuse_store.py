"""The reuse store of ``--hermes-reuse`` (``containers/reuse.py``), without docker: a claimed
container is never handed to a second run, a claim whose processes died is free, parked
containers expire, a changed image is stale, and the store leaves nothing when its last record
goes. The docker side is tests/plugin/test_reuse.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.labels import LABEL_REUSE, LABEL_REUSE_STORE
from pytest_hermes_kernel.containers.reuse import (Claimant, ReusePolicy, ReuseSpec, ReuseStore, claim_or_start,
                                                   park_or_remove, removable)
from pytest_hermes_kernel.containers.rundir import reuse_dir
from pytest_hermes_kernel.procs import start_time

SPEC = ReuseSpec("docker-kernel-host", "img:latest", "sha256:aaa", (("mem_limit_bytes", "None"),))
ME = f"{os.getpid()}:{start_time(os.getpid()):.3f}:test"
DEAD = "999999999:0.000:gone"


def _claimant(member: str = ME, run: str = "run-a") -> Claimant:
    return Claimant(run, f"/nonexistent/{run}/docker-x.json", member)


@pytest.fixture
def store(tmp_path: Path) -> ReuseStore:
    tmp_path.chmod(0o700)
    return ReuseStore(str(tmp_path))


def _add(store: ReuseStore, cid: str, claimant: Claimant, idle_timeout: float | None = 3600.0) -> None:
    store.add(cid, SPEC, claimant, {"container_id": cid}, idle_timeout)


def test_a_parked_container_is_claimed_once_and_cleared_first(store: ReuseStore) -> None:
    _add(store, "c1", _claimant())
    assert store.claim(SPEC, _claimant(run="run-b"), ready=lambda c: True, remove=lambda c: None) is None  # claimed
    assert store.park("c1", 3600.0)
    cleared: list[str] = []
    got = store.claim(SPEC, _claimant(run="run-b"), ready=lambda c: cleared.append(c) or True, remove=lambda c: None)
    assert got == {"container_id": "c1"} and cleared == ["c1"]
    assert store.claim(SPEC, _claimant(run="run-c"), ready=lambda c: True, remove=lambda c: None) is None


def test_a_claim_whose_processes_died_is_free(store: ReuseStore) -> None:
    _add(store, "c1", _claimant(member=DEAD))
    assert store.claim(SPEC, _claimant(run="run-b"), ready=lambda c: True, remove=lambda c: None) == {"container_id": "c1"}


def test_another_spec_or_an_expired_container_is_not_claimed(store: ReuseStore) -> None:
    _add(store, "c1", _claimant(member=DEAD))
    other = ReuseSpec("docker-kernel-host", "img:latest", "sha256:bbb", SPEC.shape)  # a rebuilt image
    assert other.key != SPEC.key
    assert store.claim(other, _claimant(), ready=lambda c: True, remove=lambda c: None) is None
    store.park("c1", 0.0)
    assert store.claim(SPEC, _claimant(), ready=lambda c: True, remove=lambda c: None) is None


def test_a_container_that_is_not_ready_is_removed_with_its_record(store: ReuseStore) -> None:
    _add(store, "c1", _claimant(member=DEAD))
    removed: list[str] = []
    assert store.claim(SPEC, _claimant(), ready=lambda c: False, remove=removed.append) is None
    assert removed == ["c1"] and store.records() == []


def test_start_records_a_reusable_container_and_its_key_and_the_last_user_parks_it(store: ReuseStore) -> None:
    policy = ReusePolicy(idle_timeout=60.0)
    record = claim_or_start(store, SPEC, _claimant(), policy, ready=lambda c: True, remove=lambda c: None,
                            start=lambda labels: ({"container_id": "c9", "labels": labels}, "PRIVATE KEY"))
    assert record["reuse"] is True and "reused" not in record
    assert record["labels"][LABEL_REUSE] == "1" and record["labels"][LABEL_REUSE_STORE] == store.path
    key = Path(store.key_file("c9"))
    assert key.read_text() == "PRIVATE KEY" and stat.S_IMODE(key.stat().st_mode) == 0o600
    removed: list[str] = []
    park_or_remove(store, record, policy, removed.append)
    assert removed == [] and store.records()[0]["claim"] is None
    park_or_remove(store, {"container_id": "plain"}, policy, removed.append)  # not reusable: removed
    assert removed == ["plain"]


def test_sweep_verdicts_and_the_store_leaves_nothing(store: ReuseStore, tmp_path: Path) -> None:
    _add(store, "live", _claimant())
    _add(store, "parked", _claimant(member=DEAD))
    labels = {LABEL_REUSE: "1", LABEL_REUSE_STORE: store.path}
    same = {"img:latest": "sha256:aaa"}.get
    assert removable("live", labels, reused=True, current_store=store.path, image_id_now=same) == "claimed"
    assert removable("parked", labels, reused=False, current_store=store.path, image_id_now=same) == "parked"
    assert removable("parked", labels, reused=True, current_store="/elsewhere", image_id_now=same) == "parked"
    assert removable("parked", labels, reused=False, current_store=store.path,
                     image_id_now=lambda _name: "sha256:new") == "stale"
    assert removable("gone", labels, reused=True, current_store=store.path, image_id_now=same) == "unknown"
    store.park("live", 3600.0)
    assert removable("live", labels, reused=True, current_store=store.path, image_id_now=same) == "expired"
    assert not Path(reuse_dir(str(tmp_path), create=False)).exists()  # the last record took the store with it
    assert removable("live", labels, reused=True, current_store=store.path, image_id_now=same) == "unknown"
