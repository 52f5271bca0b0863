"""Found by a breaker helper (2026-12-06, review of 4bcc1ed): a docker download whose big file
shrank while the tar was made (a cell's truncate, the file already open and its size in the tar
header) failed whole, "t: the archive could not be made in the container (t/big: unexpected end
of data (the archive is cut here)); nothing was kept", the other files with it; local and ssh copy
the rest. Fixed: the archiver pads that member to its header's size and marks it; the host drops
the file and rejects it ("changed during the copy (shorter: ...)"); the rest is copied.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import FileTransferError
from tests.support import transport_of_its_own, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

# the cell's move: once a process has t/big open (the archiver), truncate it to 1 MB; the archiver
# is held (SIGSTOP) meanwhile, so a loaded machine's late watcher still finds it mid-read (under a
# full -n 4 run it had read all 64 MB first: the test failed, the code right)
_TRUNCATE_WHEN_OPEN = r"""
import os, signal, sys, time
target, end = os.path.realpath(sys.argv[1]), time.time() + 20
while time.time() < end:
    for pid in os.listdir('/proc'):
        try:
            fds = ['/proc/%s/fd/%s' % (pid, fd) for fd in os.listdir('/proc/%s/fd' % pid)]
            if pid != str(os.getpid()) and any(os.readlink(fd) == target for fd in fds):
                os.kill(int(pid), signal.SIGSTOP)
                try:
                    os.truncate(target, 1 << 20)
                finally:
                    os.kill(int(pid), signal.SIGCONT)
                sys.exit(0)
        except OSError:
            pass
    time.sleep(0.001)
"""


def _download(tmp_path, monkeypatch, top: str):
    from pytest_hermes_kernel.transports.docker.files import DockerFiles

    archive = DockerFiles.archive

    def truncate_while_archived(self: DockerFiles, parts: tuple[str, ...]):
        api = self.transport.api
        watcher = api.exec_create(self.container_id, [self.transport.python, "-c", _TRUNCATE_WHEN_OPEN,
                                                      self.path(("t", "big"))])["Id"]
        api.exec_start(watcher, detach=True)
        # the archive only once the watcher runs: started late on a loaded machine, it came after all
        # 64 MB were read (both cases failed once in a clean-clone run beside other work; the code right)
        wait_until(lambda: api.exec_inspect(watcher)["Running"] or api.exec_inspect(watcher)["ExitCode"] is not None,
                   20.0, what="the truncating watcher to run")
        return archive(self, parts)

    with transport_of_its_own("docker", server=False) as transport:
        with start_kernel(transport) as kernel:
            made = kernel.execute("import os\nos.makedirs('t')\nopen('t/big', 'wb').write(os.urandom(64 << 20))\n"
                                  "open('t/small', 'w').write('small')")
            assert made.status == "ok", made.summary()
            monkeypatch.setattr(DockerFiles, "archive", truncate_while_archived)
            return kernel.download(top, tmp_path / "got")


def test_a_tree_whose_big_file_shrank_as_it_was_read_copies_the_rest(tmp_path, monkeypatch) -> None:
    report = _download(tmp_path, monkeypatch, "t")

    assert (tmp_path / "got" / "small").read_text() == "small"
    assert not (tmp_path / "got" / "big").exists()
    assert not report.complete and [r.path for r in report.rejected] == ["t/big"], report.rejected
    assert "changed during the copy (shorter" in report.rejected[0].reason, report.rejected


def test_a_one_file_download_of_a_file_that_shrank_as_it_was_read_names_it(tmp_path, monkeypatch) -> None:
    with pytest.raises(FileTransferError, match="t/big: changed during the copy"):
        _download(tmp_path, monkeypatch, "t/big")
    assert not (tmp_path / "got").exists()
