"""Found by a breaker helper (2026-12-06, review of 4bcc1ed): a docker download that failed on the
host mid-archive (over ``max_bytes``: a listed file that grew before the tar was made) left the
tar's process in the container, blocked on a full pipe and holding the file, for as long as the
error lived: 3 s later it was still there (``ps``: ``python3 -I -c import os, stat, sys,
tarfile ...``), and pytest keeps a failed test's error until the end of the run. Fixed: the fetch
closes the archive's exec when it ends, however it ends.
"""

from __future__ import annotations

import os
import time

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import TransferTooLargeError
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

_GROW = "import sys\nopen(sys.argv[1], 'ab').write(b'x' * (40 << 20))\n"
_ARCHIVERS = ("import subprocess\n[line for line in subprocess.run(['ps', '-eo', 'args'], capture_output=True, "
              "text=True).stdout.splitlines() if 'tarfile.open(fileobj=sys.stdout.buffer' in line]")


def test_a_download_over_its_bound_mid_archive_ends_the_archiver(tmp_path, monkeypatch) -> None:
    from pytest_hermes_kernel.transports.docker.files import DockerFiles
    from pytest_hermes_kernel.transports.docker.transport import DockerTransport

    archive = DockerFiles.archive

    def grow_then_archive(self: DockerFiles, parts: tuple[str, ...]):  # the cell's append, between listing and bytes
        self.transport.run_script(self.container_id, _GROW, self.path(parts), user="")
        return archive(self, parts)

    transport = DockerTransport(server=False, run_id=f"archiver-left-{os.getpid()}-{time.monotonic_ns()}")
    try:
        with start_kernel(transport) as kernel:
            assert kernel.execute("open('small', 'w').write('x')").status == "ok"
            monkeypatch.setattr(DockerFiles, "archive", grow_then_archive)
            with pytest.raises(TransferTooLargeError) as caught:  # (held, as a failed test's report holds it)
                kernel.download("small", tmp_path / "got", max_bytes=1 << 20)

            left = lambda: kernel.execute(_ARCHIVERS).value  # noqa: E731
            wait_until(lambda: left() == "[]", 10.0, interval=0.2, what="the archive's process to end")
            assert caught.value is not None and not (tmp_path / "got").exists()
    finally:
        transport.close()
