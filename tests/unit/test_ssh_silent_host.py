"""An ssh host that stopped answering (a paused sshd, a black-holed route) is *silent*: probes
(``kill``, ``alive``, ``reattach``, ``cleanup``, the leak check's scan) do not each wait for a
connect timeout there. They fail at once, but try one short connection every ``SILENT_RETRY_S``
seconds, so a host that came back is reached again (a kill ends its runner) and a dead one costs
every test's leak check one short try now and then, not ``connect_timeout`` each (measured on a
paused sshd container: 8.7 s to notice, then 5.0 s per leak snapshot before, 0-2 s after).

The connection is faked here (what it costs and when it is tried is the policy under test); the
real paused sshd is ``tests/transports/test_ssh.py``.
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from pytest_hermes_kernel.errors import TransportLostError
from pytest_hermes_kernel.kernel.contract import Launched, LaunchSpec
from pytest_hermes_kernel.transports.detached import KILL_KERNEL_SCRIPT, KILL_SESSION_SCRIPT
from pytest_hermes_kernel.transports.ssh import probes, silence
from pytest_hermes_kernel.transports.ssh.transport import SILENT_CONNECT_S, SshTransport
from tests.support import wait_until

RETRY_S = 0.3  # SILENT_RETRY_S, shortened for the test


class FakeConnection:
    usable = True
    unresponsive = None
    target = "hermes@127.0.0.1:1"

    def __init__(self, ran: list[list[str]]) -> None:
        self.ran = ran

    def close(self) -> None:
        self.usable = False

    def open_channels(self) -> dict[int, str]:
        return {}

    def run(self, command: str, *, stdin: bytes | None = None, timeout: float = 30.0) -> tuple[int, bytes, bytes]:
        self.ran.append(shlex.split(command))
        return 0, b"gone\n", b""  # the kill scripts' answer


class Host:
    """The far side: answers or not; records each connect try's timeout."""

    def __init__(self) -> None:
        self.silent = True
        self.tries: list[float | None] = []
        self.ran: list[list[str]] = []  # argv of each command run there

    def connect(self, timeout: float | None = None) -> FakeConnection:
        self.tries.append(timeout)
        if self.silent:
            raise TransportLostError("cannot reach ssh host: no banner", timed_out=True)
        return FakeConnection(self.ran)


@pytest.fixture
def silent(monkeypatch: pytest.MonkeyPatch) -> tuple[SshTransport, Host]:
    monkeypatch.setattr(silence, "SILENT_RETRY_S", RETRY_S)
    transport = SshTransport(target="hermes@127.0.0.1:1", server=False)  # never connects: _connect is the fake
    host = Host()
    monkeypatch.setattr(transport, "_connect", host.connect)
    with pytest.raises(TransportLostError):
        transport._connection()  # the first look finds the host silent (a full connect timeout)
    assert host.tries == [None]
    return transport, host


def _probe(transport: SshTransport) -> Any:
    return transport.connection()


def test_a_probe_on_a_silent_host_fails_at_once_without_a_connect_try(silent):
    transport, host = silent

    for _ in range(3):
        with pytest.raises(TransportLostError, match="not answering") as caught:
            _probe(transport)
        assert caught.value.permanent

    assert host.tries == [None]  # no try: nothing waited


def test_a_silent_host_gets_one_short_try_per_retry_interval(silent):
    transport, host = silent
    wait_until(lambda: _tried(transport, host) > 1, 5.0, what="a short try once the retry interval passed")

    assert host.tries[1] == SILENT_CONNECT_S  # bounded by the short timeout, not connect_timeout
    with pytest.raises(TransportLostError, match="not answering"):
        _probe(transport)  # and the interval starts again
    assert len(host.tries) == 2


def test_a_host_that_answers_again_is_used_at_once_after_the_interval(silent):
    transport, host = silent
    host.silent = False

    wait_until(lambda: _connected(transport), 5.0, what="the probe reconnects once the host answers")

    assert host.tries == [None, SILENT_CONNECT_S]
    assert transport.connection() is transport.current_connection  # no longer silent: held, no new try


def test_the_leak_probe_on_a_silent_host_reports_it_without_a_connect_timeout(silent):
    transport, host = silent
    assert transport.connected_once is False  # the fake never connected; a real transport had
    transport.connected_once = True

    for _ in range(3):
        with pytest.raises(TransportLostError, match="not answering"):
            probes.snapshot(transport, host_pid=1)  # the checker reports this host as not checked

    assert host.tries == [None]


def _tried(transport: SshTransport, host: Host) -> int:
    try:
        _probe(transport)
    except TransportLostError:
        pass
    return len(host.tries)


def _connected(transport: SshTransport) -> bool:
    try:
        _probe(transport)
    except TransportLostError:
        return False
    return True


def _launched(pid: int) -> Launched:
    return Launched(stream=None, pid=pid, kernel_dir=f"/home/hermes/.hermes-kernels/k{pid}")  # type: ignore[arg-type]


def test_a_kill_reaches_a_host_that_answers_again_while_other_probes_wait_their_turn(silent):
    """A refused kill leaves the runner until its orphan timer: kills do not wait for the turn the
    other probes' tries set."""
    transport, host = silent
    host.silent = False
    with pytest.raises(TransportLostError, match="not answering"):
        _probe(transport)  # the probes' next try is not due yet

    assert transport.kill(_launched(31)) is True
    assert host.tries == [None, SILENT_CONNECT_S]  # one short try, which reached it


def test_kills_of_many_kernels_on_a_silent_host_cost_one_short_try(silent):
    transport, host = silent

    assert [transport.kill(_launched(pid)) for pid in range(100, 120)] == [False] * 20

    assert host.tries == [None, SILENT_CONNECT_S]  # the first kill tried; the others failed at once


def _what_ran(host: Host) -> list[tuple[str, str]]:
    """``(what, argument)`` of each command run on the host: a kill script and its pid or kernel
    id, or ``rm`` and its path."""
    names = {KILL_SESSION_SCRIPT: "kill session", KILL_KERNEL_SCRIPT: "kill kernel"}
    ran = [argv[:1] + argv[2:] if argv[1:3] == ["-I", "-c"] else argv for argv in host.ran]  # (python3 -I -c SCRIPT)
    return [(names.get(argv[2], "?"), argv[3]) if argv[1:2] == ["-c"] else (argv[0], argv[-1]) for argv in ran]


def test_a_cleanup_ends_a_runner_alive_could_not_tell_about_before_its_dir_goes(silent):
    """Seen: right after an unpause, the runner being replaced was not killed (``alive()`` was
    refused: ``False``), and the cleanup, whose own try reached the host, removed its dir while
    it ran on."""
    transport, host = silent
    host.silent = False
    launched = _launched(31)

    assert transport.alive(launched) is False  # refused: the probes' next try is not due yet
    transport.cleanup(launched)

    assert _what_ran(host) == [("kill session", "31"), ("rm", launched.kernel_dir)]
    assert transport.left_behind == {}


def test_a_cleanup_ends_no_runner_seen_gone(silent):
    transport, host = silent
    host.silent = False
    launched = _launched(31)
    launched.extra["gone"] = True  # e.g. alive() saw it gone, or a kill did

    transport.cleanup(launched)

    assert _what_ran(host) == [("rm", launched.kernel_dir)]  # no exec more than before


def test_what_a_cleanup_could_not_reach_is_ended_by_the_kernels_next_launch(silent, monkeypatch):
    """A cleanup on a silent host leaves the dir (and maybe the runner): the kernel's next launch
    ends every process of that kernel and removes the dir first (a new runner's dir has its path)."""
    transport, host = silent
    launched = _launched(31)
    kernel_id = launched.kernel_dir.rsplit("/", 1)[1]
    monkeypatch.setattr(transport, "_spawn", lambda conn, spec: _launched(32))
    transport.cleanup(launched)  # one short try: the host is still silent
    assert transport.left_behind == {kernel_id: launched.kernel_dir}
    host.silent = False

    transport.launch(LaunchSpec(kernel_id=kernel_id, config={}, env={}))
    transport.launch(LaunchSpec(kernel_id=kernel_id, config={}, env={}))  # nothing left: nothing ended

    assert _what_ran(host) == [("kill kernel", kernel_id), ("rm", launched.kernel_dir)]
    assert transport.left_behind == {}


def test_a_runner_on_a_silent_host_is_neither_alive_nor_seen_gone(silent):
    """``alive()`` is ``False`` when it cannot tell; ``seen_gone()`` is too: the core counts the
    runner dead only when it was seen gone (here: once a kill reached the host again)."""
    transport, host = silent
    launched = _launched(31)

    assert (transport.alive(launched), transport.seen_gone(launched)) == (False, False)
    assert transport.kill(launched) is False  # the kills' one short try: still silent
    assert transport.seen_gone(launched) is False
    host.silent = False
    wait_until(lambda: transport.kill(launched), 5.0, what="a kill to reach the host once it answers")

    assert transport.seen_gone(launched) is True
