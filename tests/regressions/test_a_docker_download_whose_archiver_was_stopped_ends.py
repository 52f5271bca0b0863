"""Found by a breaker helper (2026-12-06, review of 4bcc1ed): a docker download's tar is made in
the container by a process of the kernel's user, and read with no deadline. A cell's leftover (a
thread of the kernel, same user) that SIGSTOPped that process had ``download()`` wait for good:
still waiting after 90 s for 50 MB (``get_archive``'s reads had the engine client's 60 s, and no
cell could stop the engine). Fixed: no byte for ``ARCHIVE_STALL_S`` (default the client's timeout,
60 s) ends it with a ``FileTransferError`` naming the path, nothing kept.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import FileTransferError

pytestmark = pytest.mark.usefixtures("docker_ready")

STOPPER = r"""
import os, signal, threading, time
def stop_archivers():
    while True:
        for pid in os.listdir('/proc'):
            try:
                cmd = open('/proc/%s/cmdline' % pid, 'rb').read()
            except OSError:
                continue
            if b'tarfile.open(fileobj=sys.stdout.buffer' in cmd and int(pid) != os.getpid():
                os.kill(int(pid), signal.SIGSTOP)
        time.sleep(0.005)
threading.Thread(target=stop_archivers, daemon=True).start()
os.makedirs('big')
for i in range(20):
    open('big/f%d' % i, 'wb').write(os.urandom(1 << 20))
"""


def test_a_download_whose_archiver_a_cell_stopped_ends_with_an_error(tmp_path, monkeypatch) -> None:
    from pytest_hermes_kernel.transports.docker import files
    from pytest_hermes_kernel.transports.docker.transport import DockerTransport

    monkeypatch.setattr(files, "ARCHIVE_STALL_S", 3.0, raising=False)
    transport = DockerTransport(server=False, run_id=f"stopped-archiver-{os.getpid()}-{time.monotonic_ns()}")
    outcome: dict[str, object] = {}
    try:
        with start_kernel(transport) as kernel:
            assert kernel.execute(STOPPER).status == "ok"

            def download() -> None:
                try:
                    outcome["report"] = kernel.download("big", tmp_path / "got")
                except FileTransferError as exc:
                    outcome["error"] = str(exc)

            worker = threading.Thread(target=download, daemon=True)
            started = time.monotonic()
            worker.start()
            worker.join(30.0)
            took = time.monotonic() - started
            assert not worker.is_alive(), f"download() still waiting after {took:.0f} s"
    finally:
        transport.close()  # (a download still waiting sees its container go)
    assert "no byte of the archive came" in str(outcome.get("error")), outcome
    assert "big" in str(outcome["error"]) and not (tmp_path / "got").exists()
