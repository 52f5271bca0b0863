"""A kept ssh kernel whose run's sshd container is gone (removed by hand, or by the sweep of a kit
before 2026-12-02, which misreads this kit's labels and does not know kept kernels) is gone with
it: ``ls`` says ALIVE ``no`` and ``sweep --kept --kernel ID`` removes its record and key copy.

Before, with both containers of two kept ssh kernels removed, ``ls`` said ``?`` and ``sweep --kept
--kernel ID`` said ``could not end kept kernel ... cannot reach ssh host hermes@127.0.0.1:32889:
NoValidConnectionsError ...; its record is kept (the kernel still ends by itself 3600 s after its
last client)``, exit status 1, for every try until the TTL ran out: the kernel was long gone.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.containers.keys import generate_keypair


def _engine_answers() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=5)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - no SDK, no engine
        return False


pytestmark = pytest.mark.skipif(not _engine_answers(), reason="needs a docker engine to say the container is gone")

KERNEL_ID = "5" * 32


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _keep_in_a_gone_container() -> Path:
    port = _closed_port()
    private, public = generate_keypair()
    key = Path(kept.save_secret(KERNEL_ID, "ssh-key", private))
    now = time.time()
    target = f"hermes@127.0.0.1:{port}"
    kept.save(kept.KeptKernel(
        kernel_id=KERNEL_ID, transport="ssh", token="t", nodeid="test_x.py::test_load[ssh]", kept_at=now,
        detached_at=now, ttl_s=3600.0, host_pid=1,
        locator={"runner_pid": 31, "kernel_dir": f"/home/hermes/.hermes-kernels/{KERNEL_ID}",
                 "runner": f"/home/hermes/.hermes-kernels/{KERNEL_ID}/r.pyz", "python": "python3",
                 "target": target, "container_id": "0badc0de" * 8,
                 "reach": {"target": target, "key_filename": str(key), "host_key": " ".join(public.split()[:2]),
                           "server": False}}))
    return key


def test_ls_says_it_is_not_alive(private_tmp: Path, capsys) -> None:
    _keep_in_a_gone_container()
    assert main(["ls"]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if line.startswith(KERNEL_ID)]
    assert row and row[0].split()[-2] == "no", row


def test_sweep_kept_removes_its_record_and_key(private_tmp: Path, capsys) -> None:
    key = _keep_in_a_gone_container()
    code = main(["sweep", "--kept", "--kernel", KERNEL_ID[:8]])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"removed kept kernel {KERNEL_ID} (ssh, kept by test_x.py::test_load[ssh])" in out, out
    assert kept.load_all() == [] and not key.exists()
