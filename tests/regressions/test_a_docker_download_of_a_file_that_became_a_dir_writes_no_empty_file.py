"""Found by a breaker helper (2026-12-06, review of 4bcc1ed): a docker download matched each
archive member to the listing by name, and a listed file that was a directory by the time the tar
was made (a cell's ``os.remove('d/a'); os.mkdir('d/a')`` between the two) came as a directory
member that was written as the file: ``d/a`` landed as an empty file, 0 bytes, neither what was
listed (5000 bytes) nor what was there (a directory), and the report said ``complete=True``,
nothing rejected. A one-file download (``download('f', ...)``) handed a 0-byte ``f`` the same way.

Fixed: a directory member where the listing had a file is rejected ("a directory now, a file when
listed: not copied"); a one-file download of it names the file and writes nothing.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import FileTransferError
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")

_TO_DIR = "import os, sys\nos.remove(sys.argv[1])\nos.mkdir(sys.argv[1])\n"


@pytest.fixture
def kernel_whose_file_becomes_a_dir(monkeypatch):
    from pytest_hermes_kernel.transports.docker.files import DockerFiles

    archive, swapped = DockerFiles.archive, []

    def swap_then_archive(self: DockerFiles, parts: tuple[str, ...]):  # the cell's move, between listing and bytes
        code, _ = self.transport.run_script(self.container_id, _TO_DIR, self.path(("d", "a")), user="")
        swapped.append(code)
        return archive(self, parts)

    with transport_of_its_own("docker", server=False) as transport:
        with start_kernel(transport) as kernel:
            made = kernel.execute("import os\nos.makedirs('d')\nopen('d/a', 'w').write('A' * 5000)\n"
                                  "open('d/b', 'w').write('bee')")
            assert made.status == "ok", made.summary()
            monkeypatch.setattr(DockerFiles, "archive", swap_then_archive)
            yield kernel
    assert swapped == [0]


def test_a_listed_file_that_became_a_dir_is_rejected_not_written_empty(kernel_whose_file_becomes_a_dir, tmp_path):
    report = kernel_whose_file_becomes_a_dir.download("d", tmp_path / "got")

    got = tmp_path / "got"
    assert (got / "b").read_text() == "bee"
    assert not (got / "a").is_file(), f"d/a written as a file of {(got / 'a').stat().st_size} bytes"
    assert not report.complete and [r.path for r in report.rejected] == ["d/a"], report.rejected
    assert "directory" in report.rejected[0].reason, report.rejected


def test_a_one_file_download_of_a_file_that_became_a_dir_names_it(kernel_whose_file_becomes_a_dir, tmp_path):
    with pytest.raises(FileTransferError, match="d/a: a directory now") as caught:
        kernel_whose_file_becomes_a_dir.download("d/a", tmp_path / "a")

    assert not (tmp_path / "a").exists(), str(caught.value)
