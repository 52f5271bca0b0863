"""Found reviewing the leak check (2026-12-04): the filecell transport had no leak probe of its
own. A kernel dir left under its root (a runner SIGKILLed whose dir its cleanup could not remove)
went unreported on every backend, and through a backend that is not this machine's shell (a
container reached by ``docker exec``, a host by ssh) so did the kernels' processes there: a
process a cell started in a session of its own ran on after the test, unseen.

Now the transport lists the kernel dirs it made that are still there (read here for the local
shell, by one scan through any other backend), and through a backend that is not this machine's
shell the processes of this host's kernels there, and what their runners said, as they ended,
their cells left running (as the docker and ssh transports do); the leak check's cleanup ends
them. Each such process is listed once: a local shell backend's are this machine's, which the
host's own probes list.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.transports import close_transport, make_transport
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport
from tests.support import wait_until

#: A helper in a session of its own: the worker's kill does not reach it. With ``env``: no kernel marker.
HELPER = "import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True{env}).pid"


def _exists(transport: FileCellTransport, path: str) -> bool:
    code, out = transport.backend.execute(f"test -d '{path}' && echo there || echo gone", 15.0)
    assert code == 0, out
    return out.strip() == "there"


def _leaks(checker: LeakChecker, before: object) -> tuple[object, list[str]]:
    report = checker.after(before)
    return report, [desc for items in report.leaks.values() for desc in items.values()]


def test_a_kernel_dir_left_behind_is_reported_and_removed(execute_backend, monkeypatch):
    transport = make_transport("filecell", backend=execute_backend)  # listed for the leak probes
    checker = LeakChecker(grace=0.5)
    before = checker.before()
    kernel = start_kernel(transport)
    kdir = kernel.launched.kernel_dir
    try:
        assert kernel.execute("1").status == "ok"
        monkeypatch.setattr(transport, "_cleanup_quietly", lambda *_a, **_k: None)  # a cleanup that could not
        kernel.shutdown(now=True)  # SIGKILLed: the runner could not remove its own dir either
        monkeypatch.undo()
        assert _exists(transport, kdir)

        report, found = _leaks(checker, before)

        assert found == [f"kernel dir {kdir} on {transport.backend!r}"], report.format("it")
        checker.cleanup(report)
        assert not _exists(transport, kdir), "the check's cleanup removes the dir it reported"
    finally:
        kernel.shutdown()
        close_transport(transport)


@pytest.mark.parametrize("env", ["", ", env={'PATH': '/usr/bin:/bin'}"], ids=["marked", "own-environment"])
def test_a_helper_left_running_where_the_backend_runs_is_reported_once(execute_backend, env):
    transport = make_transport("filecell", backend=execute_backend)  # listed for the leak probes
    checker = LeakChecker(grace=0.5)
    before = checker.before()
    kernel = start_kernel(transport)
    try:
        helper = kernel.execute(HELPER.format(env=env)).value
        kernel.shutdown()

        report, found = _leaks(checker, before)

        named = [desc for desc in found if desc.startswith(f"pid {helper}") and desc.endswith(": sleep 300")]
        assert len(named) == 1, report.format("it")
        checker.cleanup(report)
        wait_until(lambda: not _leaks(checker, before)[1], 10.0, what="the check's cleanup to end the helper")
    finally:
        kernel.shutdown()
        close_transport(transport)
