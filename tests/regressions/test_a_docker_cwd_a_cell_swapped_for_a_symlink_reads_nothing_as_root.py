"""Seen (breaker review of 2531aa4, 2026-12-06): since a ``cwd=`` is followed whole for transfers
(its last component too), a docker kernel whose cell swapped its ``cwd=`` dir for a symlink to
``/etc`` had ``k.download("shadow", ...)`` hand the host the container's ``/etc/shadow``, a file the
cell itself could not read (``PermissionError``): the listing runs as the kernel's user and only
``lstat``-s, the bytes come from ``get_archive``, which the engine reads as root. Before 2531aa4 the
download was refused ("the working dir ... is a symlink (never followed)").

Fixed by not following a docker ``cwd=`` that is a symlink (as before 2531aa4): the transfers'
checks run as the kernel's user, but ``get_archive`` reads as root, so on docker a ``cwd=`` given as a
symlink is refused ("the working dir ... is a symlink (never followed)"); local, ssh and filecell,
whose transfers run as the kernel's own user, follow it. A fuller fix (the runner reporting the dir
it resolved at start, opened without following) needs room the compact runner does not have.
"""

from __future__ import annotations

import os
import time
import uuid

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import FileTransferError

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_download_through_a_cwd_a_cell_swapped_for_a_symlink_to_etc_is_refused(tmp_path) -> None:
    from pytest_hermes_kernel.transports.docker.transport import DockerTransport

    work = f"/home/hermes/work-{uuid.uuid4().hex[:8]}"
    transport = DockerTransport(server=False, run_id=f"swapped-cwd-{os.getpid()}-{time.monotonic_ns()}")
    try:
        with start_kernel(transport) as maker:
            assert maker.execute(f"import os\nos.makedirs({work!r})").status == "ok"
            with start_kernel(transport, cwd=work) as kernel:
                swap = kernel.execute(f"import os\nos.chdir('/')\nos.rename({work!r}, {work!r} + '-old')\n"
                                      f"os.symlink('/etc', {work!r})\nopen('/etc/shadow').read()")
                assert "PermissionError" in swap.summary(), swap.summary()  # the cell cannot read it itself
                with pytest.raises(FileTransferError):
                    kernel.download("shadow", tmp_path / "got")
    finally:
        transport.close()
    assert not (tmp_path / "got").exists()
