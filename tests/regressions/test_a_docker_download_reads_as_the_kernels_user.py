"""Seen (left open by the twelfth session, closed 2026-12-06): a docker download listed the tree as
the kernel's user but took the bytes from ``get_archive``, which the engine reads as root. A cell
that swapped a listed directory for a symlink to ``/etc`` between the two (milliseconds; here the
swap is put exactly there) had ``k.download("d/shadow", ...)`` hand the host the container's
``/etc/shadow``, a file the cell itself cannot read.

Fixed: the tar is made in the container by the kernel's user (``docker/files.py``'s
``ARCHIVE_SCRIPT`` through ``docker exec``), so a swap can at most show the host what that user
may read anyway; ``/etc/shadow`` is left out and reported not copied.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import FileTransferError
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")

_SWAP = "import os, sys\nos.rename(sys.argv[1], sys.argv[1] + '-old')\nos.symlink('/etc', sys.argv[1])\n"


def test_a_download_whose_dir_was_swapped_for_a_symlink_to_etc_reads_nothing_only_root_may(tmp_path, monkeypatch) -> None:
    from pytest_hermes_kernel.transports.docker.files import DockerFiles

    archive, swapped = DockerFiles.archive, []

    def swap_then_archive(self: DockerFiles, parts: tuple[str, ...]):  # the cell's move, between listing and bytes
        code, _ = self.transport.run_script(self.container_id, _SWAP, self.path(parts[:1]), user="")
        swapped.append(code)
        return archive(self, parts)

    with transport_of_its_own("docker", server=False) as transport:
        with start_kernel(transport) as kernel:
            made = kernel.execute("import os\nos.makedirs('d', exist_ok=True)\n"
                                  "open('d/shadow', 'w').write('x' * os.stat('/etc/shadow').st_size)\n"
                                  "open('/etc/shadow').read()")
            assert "PermissionError" in made.summary(), made.summary()  # the cell cannot read it itself
            monkeypatch.setattr(DockerFiles, "archive", swap_then_archive)
            try:
                report = kernel.download("d/shadow", tmp_path / "got")
            except FileTransferError as exc:
                outcome = str(exc)
            else:
                outcome = repr(report.rejected)
    assert swapped == [0]
    got = tmp_path / "got"
    assert not got.exists() or "root:" not in got.read_text(errors="replace"), got.read_text(errors="replace")[:80]
    assert "shadow" in outcome, outcome
