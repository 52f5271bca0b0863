"""docs/reference.md's transport of one's own (``NiceTransport``), as a backend author uses it.

"Writing a transport" said what to implement but not how to start the runner (its file, mode,
config, environment), nor that ``kill`` must end the runner's session: an author had to read
the local transport's source, and a first try that killed the runner's process group failed
the contract (the worker, in a group of its own, ran on). The page now shows a whole transport;
this runs the contract suite against it, as written, in a fresh directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.readme import fresh_env, run_command
from tests.support import REPO_ROOT

CONFTEST = """
import pytest

from nice_transport import NiceTransport


@pytest.fixture
def hermes_transport():
    transport = NiceTransport()
    yield transport
    transport.close()
"""


def write_suite(directory: Path, conftest: str = CONFTEST) -> None:
    """The page's transport as ``nice_transport.py``, a ``conftest.py`` and the contract suite."""
    page = (REPO_ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "(Transport):" in b and "def launch(" in b]
    assert len(blocks) == 1, "docs/reference.md shows no whole transport of one's own (class ...(Transport) with launch)"
    (directory / "nice_transport.py").write_text(blocks[0], encoding="utf-8")
    (directory / "conftest.py").write_text(conftest, encoding="utf-8")
    (directory / "test_contract.py").write_text("from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n",
                                                encoding="utf-8")


def test_the_pages_own_transport_passes_the_contract_suite(tmp_path: Path) -> None:
    write_suite(tmp_path)

    ran = run_command("python -m pytest -q -p no:cacheprovider -n 2 --hermes-leak-check=error -rs", tmp_path)

    out = ran.stdout
    assert ran.returncode == 0 and " failed" not in out and " error" not in out, out[-4000:]
    assert "its tests ran on the nice transport" in out, out[-4000:]
    assert "does not move files" not in out, out[-4000:]  # its files() is LocalFiles: the transfer case runs
    for case in ("test_kill_ends_every_process_of_the_kernel", "test_the_transport_lists_every_process_of_its_kernel"):
        assert case not in out, f"{case} did not pass:\n{out[-4000:]}"  # (-rs lists skips by reason, not by name)


def test_the_suite_fails_that_transport_when_its_cleanup_leaves_kernel_dirs(tmp_path: Path) -> None:
    """The same transport with ``cleanup`` doing nothing: a killed runner's kernel dir (runner file,
    log) stayed in the temp dir for good, and the whole suite passed (77 passed, 23 skipped: the
    leak check knows only the kit's own kernel dir roots). The case that catches it runs alone (the
    whole suite, as the first test here runs it, took ~26 s of wall and 12 CPU-s for this one line)."""
    write_suite(tmp_path, CONFTEST.replace("NiceTransport()", "Untidy()") +
                "\n\nclass Untidy(NiceTransport):\n    def cleanup(self, launched):\n        pass\n")
    left = tmp_path / "tmp"  # where the dirs it leaves go (they stayed in /tmp for good, some 7 a run)
    left.mkdir()

    ran = run_command("python -m pytest -q -p no:cacheprovider -k test_a_killed_kernels_dir_is_removed_at_shutdown",
                      tmp_path, env=fresh_env(TMPDIR=str(left)))

    assert ran.returncode == 1 and "1 failed" in ran.stdout, ran.stdout[-4000:]
    assert "FAILED test_contract.py::test_a_killed_kernels_dir_is_removed_at_shutdown" in ran.stdout, ran.stdout[-4000:]
    assert "to be removed by shutdown() (Transport.cleanup removes what the launch made)" in ran.stdout, ran.stdout[-4000:]


UNIX_CONFTEST = """
import pytest

from unix_transport import UnixTransport


@pytest.fixture
def hermes_transport():
    transport = UnixTransport()
    yield transport
    transport.close()
"""


def test_the_pages_re_attachable_transport_passes_the_contract_suite_with_its_re_attach_cases(tmp_path: Path) -> None:
    """The page said how to start a runner that ends with its stream (``serve --fd``) and that a
    ``reattachable`` transport implements ``reattach``, but not how to start a runner that outlives
    its stream, nor what a re-attach stream carries: an author had to read the docker and ssh
    transports. The page now shows one; its re-attach cases must run and pass, not skip."""
    write_suite(tmp_path, UNIX_CONFTEST)
    page = (REPO_ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "(NiceTransport):" in b]
    assert len(blocks) == 1, "docs/reference.md shows no re-attachable transport (class ...(NiceTransport))"
    (tmp_path / "unix_transport.py").write_text(blocks[0], encoding="utf-8")

    ran = run_command("python -m pytest -q -p no:cacheprovider -n 2 --hermes-leak-check=error -rs", tmp_path)

    out = ran.stdout
    assert ran.returncode == 0 and " failed" not in out and " error" not in out, out[-4000:]
    assert "its tests ran on the unix transport" in out, out[-4000:]
    assert "declares no re-attach" not in out and "does not move files" not in out, out[-4000:]


def test_the_suite_names_a_launched_pid_that_is_a_wrapper_not_the_runner(tmp_path: Path) -> None:
    """The same transport with ``setsid`` put in front of ``nice`` (it runs in a new session, so
    ``setsid`` forks the runner and exits): ``Launched.pid`` was the gone wrapper's, and six cases
    failed ("a running runner must not be seen gone", "kernel_processes does not list {'the runner':
    ...}", the kill and watchdog cases), none of them saying that the pid was not the runner's."""
    write_suite(tmp_path)
    source = (tmp_path / "nice_transport.py").read_text(encoding="utf-8")
    assert source.count('["nice", "-n", "5",') == 1, "the page's transport no longer runs `nice -n 5`"
    (tmp_path / "nice_transport.py").write_text(source.replace('["nice", "-n", "5",', '["setsid", "nice", "-n", "5",'),
                                                encoding="utf-8")

    (tmp_path / "tmp").mkdir()  # its kernel dirs: the wrapper's runner is not the one its kill() ends

    ran = run_command("python -m pytest -q -p no:cacheprovider -k test_the_launched_pid_is_the_runners_own", tmp_path,
                      env=fresh_env(TMPDIR=str(tmp_path / "tmp")))

    assert ran.returncode == 1 and "1 failed" in ran.stdout, ran.stdout[-4000:]
    assert re.search(r"Launched\.pid is \d+, but the kernel runner \(its worker's parent, seen from a cell\) is pid \d+: "
                     r"the launch returned the pid of another process, e\.g\. a wrapper that forks the runner and exits",
                     ran.stdout), ran.stdout[-4000:]


LEAKY = '''

import os
import tempfile

from pytest_hermes_kernel.transports.runner_zipapp import write_runner


class Leaky(NiceTransport):
    """As the page's re-attachable transport launched: the dir and runner file first, then an exec
    of an interpreter that is not there raising past the clean-up."""

    def launch(self, spec):
        if spec.python and not os.path.exists(spec.python):
            write_runner(tempfile.mkdtemp(prefix="leaky-kernel-"))
            raise FileNotFoundError(2, "No such file or directory", spec.python)
        return super().launch(spec)
'''


def test_the_suite_fails_a_transport_whose_failed_launch_leaves_its_dir(tmp_path: Path) -> None:
    """The page's re-attachable transport left a ``unix-kernel-*`` dir (its runner file) in the temp
    dir at every run of the contract suite, which passed: its ``subprocess.run`` of a missing
    interpreter raised ``FileNotFoundError`` past its ``rmtree``. The start case now fails it."""
    write_suite(tmp_path, CONFTEST.replace("NiceTransport()", "Leaky()") + LEAKY)
    (tmp_path / "tmp").mkdir()

    ran = run_command("python -m pytest -q -p no:cacheprovider -k test_runner_dying_at_start", tmp_path,
                      env=fresh_env(TMPDIR=str(tmp_path / "tmp")))

    assert ran.returncode == 1 and "1 failed" in ran.stdout, ran.stdout[-4000:]
    assert re.search(r"the failed start left \['[^']*/leaky-kernel-\w+'\] on this machine", ran.stdout), ran.stdout[-4000:]
    assert "a launch that raises removes what it made" in ran.stdout, ran.stdout[-4000:]
