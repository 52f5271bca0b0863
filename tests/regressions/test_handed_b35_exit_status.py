"""Handed case B35: a missing exit status is never read as success or as an ordinary failure.

Over the execute-only reference backends (``sh -c`` here, ``docker exec`` into the run's kernel
host container) and through the filecell transport that judges their statuses:

* (a) a command whose output is discarded still returns its own status (``exit 3`` -> 3);
* (b) a command killed by SIGKILL is 137 (128 + 9) on every backend: ``subprocess``'s ``-9``
  and docker's ``137`` are one mapping;
* (c) no status (docker-py's ``exit_code=None`` when the stream ended first, paramiko's ``-1``)
  is :class:`ExitStatusUnknownError` (a :class:`TransportLostError`): the transport refuses it,
  a kernel start through such a backend fails saying so, and the docker backend itself raises
  instead of making up a number. These use small deliberately buggy backends in this file.

Not here: (d) an ssh cancel against a server without the "signal" request; no execute-only ssh
backend ships (the ssh transport ends kernels by pid over a second channel already).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle, KernelOptions
from pytest_hermes_kernel.errors import ExitStatusUnknownError, KernelStartError, TransportLostError
from pytest_hermes_kernel.transports.filecell.backends import DockerExecBackend, LocalShellBackend
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport


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

    def exec_start(self, exec_id: str) -> bytes:
        return b"partial output"

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        return {"ExitCode": None, "Running": True}


def test_the_docker_backend_never_makes_up_a_status():
    client = type("Client", (), {"api": _ExecApi()})()
    backend = DockerExecBackend("c" * 64, client=client)
    backend._has_timeout = True  # (the probe would ask the fake api too)

    with pytest.raises(ExitStatusUnknownError):
        backend.execute("sleep 30", 60.0)
