"""A kept record this kit writes is one the kit before it (2026-12-05, f6462ec) can read.

d65e9a2 (2026-12-06) put the kernel env's secret values into the record as a new field,
``secrets``, in every record (``[]`` too). That kit reads a record as ``KeptKernel(**json)``: one
more field is a ``TypeError``, and the record is skipped as "not a record this version can read".
Run beside this kit (another checkout, a pinned project on the same machine), its ``hermes-kernel
ls`` listed none of this kit's kept kernels, its process sweep killed each one's kernel as an
orphan's ("host N is gone"), and its container sweep removed a kept docker kernel's container
(what 814eb1d saw of 50c2a37 and ``rootdir``). The secrets are written beside the record now
(``<kernel id>.env-secrets``, 0600), which that kit's ``remove`` removes with it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import time
import uuid
from pathlib import Path
from typing import Any

from pytest_hermes_kernel.containers import kept

#: The record of the kit before (f6462ec): its fields, read by ``KeptKernel(**json.load(fh))``.
OlderKeptKernel = dataclasses.make_dataclass("OlderKeptKernel", [
    ("kernel_id", str), ("transport", str), ("locator", dict), ("token", str), ("nodeid", str),
    ("kept_at", float), ("detached_at", float), ("ttl_s", float), ("host_pid", int),
    ("worker_pid", Any, dataclasses.field(default=None)), ("rootdir", Any, dataclasses.field(default=None))])


def _record(kernel_id: str, secrets: list[str]) -> kept.KeptKernel:
    now = time.time()
    return kept.KeptKernel(kernel_id=kernel_id, transport="local", locator={"runner_pid": 1, "kernel_dir": "/nowhere"},
                           token="t", nodeid="test_x.py::test_k[local]", kept_at=now, detached_at=now, ttl_s=3600.0,
                           host_pid=1, worker_pid=2, rootdir="/r", secrets=secrets)


def test_the_kit_before_reads_a_record_with_env_secrets_and_this_kit_still_redacts_them(private_tmp: Path) -> None:
    kid, secret = uuid.uuid4().hex, "kept-env-" + "canary-7Qx"
    path = Path(kept.save(_record(kid, [secret])))

    older = OlderKeptKernel(**json.loads(path.read_text()))  # raised TypeError: unexpected keyword 'secrets'
    assert older.kernel_id == kid and secret not in path.read_text()
    assert kept.find(kid).secrets == [secret]  # exec and attach still redact it
    beside = [p for p in path.parent.iterdir() if p.name.startswith(f"{kid}.") and p.suffix != ".json"]
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in beside] == [0o600], beside
    kept.remove(kid)  # (the kit before's remove is this one: every non-.json file of the kernel's id)
    assert not [p for p in path.parent.iterdir() if p.name.startswith(f"{kid}.")]


def test_the_kit_before_reads_a_record_without_env_secrets(private_tmp: Path) -> None:
    kid = uuid.uuid4().hex
    path = Path(kept.save(_record(kid, [])))
    assert OlderKeptKernel(**json.loads(path.read_text())).kernel_id == kid
    assert kept.find(kid).secrets == []
