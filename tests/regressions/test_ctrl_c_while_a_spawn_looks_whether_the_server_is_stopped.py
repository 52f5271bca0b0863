"""Found reviewing the frozen-parts round (2026-12-05): a kernel start on docker or ssh whose
kernel server does not answer at once now looks every 0.5 s whether the server is stopped (an exec
of ``cat /proc/<pid>/stat``: on a busy machine a good part of that wait). A Ctrl-C that landed
during that look left the request un-abandoned, unlike one during the wait itself
(``test_ctrl_c_in_a_kernel_servers_spawn_ends_the_kernel.py``): the kernel the server forked once it
went on ran, owned by no one, until its orphan timer (60 s). It is ended at once now.
"""

from __future__ import annotations

import importlib
import signal

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.contract._probes import wait_until
from tests.support import stays_true, transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")
BOUND_S = 15.0
"""Seconds the unclaimed kernel may live on: a kill through the server (its orphan timer is 60 s)."""


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_ctrl_c_during_the_look_at_a_stopped_server_ends_the_forked_kernel(name: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(f"pytest_hermes_kernel.transports.{name}.kernel_server")
    with transport_of_its_own(name, server=True) as transport:
        first = start_kernel(transport)
        extra = first.launched.extra
        server = extra["server"]

        def kill(sig: str) -> None:
            argv = ["kill", f"-{sig}", str(server.pid)]
            if "conn" in extra:
                assert extra["conn"].run(" ".join(argv))[0] == 0
            else:
                assert transport._run(extra["container"], argv)[0] == 0

        def ctrl_c_while_looking(*_args: object) -> bool:
            kill("CONT")  # the server goes on: it forks the kernel and answers, to no one
            signal.raise_signal(signal.SIGINT)
            return False

        started: list[str] = []
        launch = transport.launch
        monkeypatch.setattr(transport, "launch", lambda spec: (started.append(spec.kernel_id), launch(spec))[1])
        monkeypatch.setattr(module, "server_stopped", ctrl_c_while_looking)
        kill("STOP")
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            with pytest.raises(KeyboardInterrupt):
                start_kernel(transport)
        finally:
            signal.signal(signal.SIGINT, previous)
            monkeypatch.undo()  # its later looks (the first kernel's shutdown) are real ones
            kill("CONT")
        [kernel_id] = started

        def running() -> list[str]:
            return transport.kernel_processes(kernel_id, None)

        wait_until(lambda: stays_true(lambda: not running(), 2.0), BOUND_S,
                   what=f"kernel {kernel_id}, forked for a launch Ctrl-C left, to end")
        first.shutdown()
