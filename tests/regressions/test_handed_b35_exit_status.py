"""Handed case B35: a missing exit status is never read as success or as an ordinary failure.

Over the execute-only reference backends (``sh -c`` here, ``docker exec`` into the run's kernel
host container, ssh exec channels into the run's sshd container) and through the filecell
transport that judges their statuses:

* (a) a command whose output is discarded still returns its own status (``exit 3`` -> 3);
* (b) a command killed by SIGKILL is 137 (128 + 9) on every backend: ``subprocess``'s ``-9``
  and docker's ``137`` are one mapping;
* (c) no status (docker-py's ``exit_code=None`` when the stream ended first, paramiko's ``-1``)
  is :class:`ExitStatusUnknownError` (a :class:`TransportLostError`): the transport refuses it,
  a kernel start through such a backend fails saying so, and the docker backend itself raises
  instead of making up a number. These use small deliberately buggy backends in this file.
  Over ssh, the link is broken for real under a running ``sleep 30`` (a fault proxy between
  the client and sshd resets it, or goes silent until the keepalives give up): the call ends
  with :class:`ExitStatusUnknownError`, never 0 or -1.
* (d) a cancel over ssh never needs the "signal" request (which servers before OpenSSH 7.9
  ignore): the ssh backend sends none at all; at the timeout it SIGKILLs the command's process
  group over a second channel and says so. The command here ignores every catchable signal.
"""

from __future__ import annotations

import shlex
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle, KernelOptions
from pytest_hermes_kernel.errors import ExitStatusUnknownError, KernelStartError, TransportLostError
from pytest_hermes_kernel.transports.filecell.backends import DockerExecBackend, LocalShellBackend
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport
from pytest_hermes_kernel.transports.filecell.ssh_exec import SshExecBackend
from pytest_hermes_kernel.faults.proxy import ProxyRoute
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.detached import ALIVE_SCRIPT
from tests.support import wait_until


def test_a_silent_command_returns_its_own_status(execute_backend):
    transport = FileCellTransport(execute_backend)
    assert transport.run_command("sh -c 'exit 3' >/dev/null 2>&1", 30.0) == (3, "")
    assert transport.run_command("exit 0", 30.0) == (0, "")


def test_a_sigkill_is_137_on_every_backend(execute_backend):
    code, _ = FileCellTransport(execute_backend).run_command("kill -9 $$", 30.0)
    assert code == 137  # 128 + SIGKILL, as sh and docker report it; never -9 on one and 137 on another
    code, _ = FileCellTransport(execute_backend).run_command("sh -c 'kill -9 $$'", 30.0)
    assert code == 137


class NoStatusBackend:
    """docker-py #2450/#2557, asyncssh #591: the output arrives, the exit status does not."""

    def __init__(self, returned: Any) -> None:
        self.inner = LocalShellBackend()
        self.returned = returned

    def execute(self, cmd: str, timeout: float | None) -> tuple[Any, str]:
        _, out = self.inner.execute(cmd, timeout)
        return self.returned, out

    def __repr__(self) -> str:
        return f"NoStatusBackend({self.returned!r})"


@pytest.mark.parametrize("returned", [None, -1, 256, "0", True], ids=["None", "minus-one", "256", "str", "bool"])
def test_a_missing_exit_status_is_unknown_never_success(returned):
    transport = FileCellTransport(NoStatusBackend(returned))

    with pytest.raises(ExitStatusUnknownError) as info:
        transport.run_command("true", 30.0)
    assert isinstance(info.value, TransportLostError) and info.value.returned == repr(returned)
    with pytest.raises(KernelStartError, match="exit status"):
        KernelHandle(transport, KernelOptions(start_timeout=30.0)).start()


class _ExecApi:
    """The docker API of an exec whose stream ended before the exec did (no ``ExitCode`` yet)."""

    def exec_create(self, *args: Any, **kwargs: Any) -> dict[str, str]:
        return {"Id": "e" * 64}

    def exec_start(self, exec_id: str, socket: bool = False) -> Any:
        """The exec's hijacked connection (the backend writes the command to its stdin): it
        carries one stdout frame of partial output, then ends."""
        import socket as sockets
        import struct

        ours, self.peer = sockets.socketpair()
        self.peer.sendall(struct.pack(">BxxxL", 1, 14) + b"partial output")
        self.peer.shutdown(sockets.SHUT_WR)
        return ours

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        return {"ExitCode": None, "Running": True}


def test_the_docker_backend_never_makes_up_a_status():
    client = type("Client", (), {"api": _ExecApi()})()
    backend = DockerExecBackend("c" * 64, client=client)
    backend._has_timeout = True  # (the probe would ask the fake api too)

    with pytest.raises(ExitStatusUnknownError):
        backend.execute("sleep 30", 60.0)
    client.api.peer.close()


@pytest.fixture
def execute_ssh(docker_ready: None) -> SshExecBackend:
    """The ssh exec backend on the run's shared ssh transport."""
    from pytest_hermes_kernel.transports import get_transport

    return SshExecBackend.over(get_transport("ssh"))


@pytest.fixture
def routed_ssh(docker_ready: None) -> Iterator[tuple[SshExecBackend, ProxyRoute]]:
    """An ssh exec backend whose connection to the run's sshd goes through a fault proxy."""
    route = ProxyRoute()
    transport = make_transport("ssh", connect_via=route, keepalive_interval=0.5, keepalive_missed=2)
    yield SshExecBackend.over(transport), route
    transport.close()


@pytest.mark.parametrize("fault", ["reset", "silence"])
def test_a_broken_ssh_link_is_status_unknown(routed_ssh, execute_ssh, fault):
    backend, route = routed_ssh
    marker = f"/tmp/hermes-b35-{secrets.token_hex(6)}.started"
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(backend.execute, f"touch {marker}; sleep 30", 60.0)
        wait_until(lambda: execute_ssh.execute(f"test -e {marker}", 30.0)[0] == 0, 20.0, interval=0.2,
                   what="the sleep to run on the ssh host")  # asked over the run's own connection
        assert route.proxy is not None
        if fault == "reset":
            assert route.proxy.reset() >= 1
        else:
            route.proxy.blackhole()  # keepalives: 0.5 s x 2 unanswered ends a silent link
        with pytest.raises(ExitStatusUnknownError) as info:
            call.result(timeout=20.0)
    execute_ssh.execute(f"rm -f {marker}", 30.0)
    assert info.value.returned == "-1" and "no exit status" in str(info.value)


def _alive_on(backend: SshExecBackend, pid: str) -> bool:
    code, _ = backend.execute(f"python3 -c {shlex.quote(ALIVE_SCRIPT)} {pid}", 30.0)
    return code == 0


def test_an_ssh_cancel_ends_a_command_that_ignores_signals_without_the_signal_request(execute_ssh):
    execute_backend = execute_ssh
    pidfile = f"/tmp/hermes-b35-{secrets.token_hex(6)}.pid"
    cmd = f"trap '' HUP INT QUIT TERM; sleep 30 & echo $! > {pidfile}; wait; wait"
    with pytest.raises(TimeoutError, match="ended by SIGKILL of its process group .* over a second ssh channel"):
        execute_backend.execute(cmd, 2.0)
    code, pid = execute_backend.execute(f"cat {pidfile}; rm -f {pidfile}", 30.0)
    assert code == 0 and pid.strip().isdigit()
    wait_until(lambda: not _alive_on(execute_backend, pid.strip()), 10.0, what="the cancelled command's sleep to end")
