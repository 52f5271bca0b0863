"""Found by a breaker helper (2026-12-06, review of 4bcc1ed): a docker kernel started with its own
``python=`` ran its cells with it, but every file operation (the listing, the archive 4bcc1ed
added, an upload's checks) ran the transport's ``python3``. In an image where ``python3`` is not
on PATH the kernel ran and ``download("f", ...)`` said only "the kernel's side gave no answer to
list f" (``upload``: "... to prepare up.py"). Filecell already used the kernel's interpreter.
Fixed: a docker kernel's files run with its ``python=``.
"""

from __future__ import annotations

import os
import time

import pytest

from pytest_hermes_kernel import start_kernel

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_kernel_with_its_own_python_moves_files_where_python3_is_missing(tmp_path) -> None:
    from pytest_hermes_kernel.transports.docker.transport import DockerTransport

    transport = DockerTransport(server=False, run_id=f"no-python3-{os.getpid()}-{time.monotonic_ns()}")
    try:
        cid = transport.shared_container()  # this run's own container
        code, out, err = transport._run(cid, ["sh", "-c", "real=$(readlink -f /usr/bin/python3); rm /usr/bin/python3 && "
                                                          "echo $real && ! command -v python3"])
        assert code == 0, (out, err)
        own = out.decode().split()[0]
        (tmp_path / "up.txt").write_text("up")
        with start_kernel(transport, python=own) as kernel:
            assert kernel.execute("open('f', 'w').write('hi')").status == "ok"

            report = kernel.download("f", tmp_path / "f")
            kernel.upload(tmp_path / "up.txt", "up.txt")

            assert report.complete and (tmp_path / "f").read_text() == "hi"
            assert kernel.execute("open('up.txt').read()").value == "'up'"
    finally:
        transport.close()
