"""Bug: Ctrl-C (a ``KeyboardInterrupt``) inside a docker or ssh transport's ``launch()``, while it
waited for its kernel server's answer to the spawn request, left the kernel the server forked
running for its orphan timer (60 s by default), owned by no one.

The request had gone out, so the server forked the kernel and answered; the answer came to a
caller that had left, and sat unread. The host never attached to the kernel, nor could it end
it: it never learned its pid. Now a request left by a ``BaseException`` that is no error is
marked abandoned, and a spawn's answer that comes to no one has its kernel killed at once
(through the server: a probe runs the kill script).

The signal is raised at an exact point: as the spawn request goes out to the server (SIGINT,
Python's own handler). The local transport's fork is not the bug: the kernel's end of its
channel is a socket this process closes on the way out, and a local kernel ends with its
channel.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.contract._probes import wait_until
from pytest_hermes_kernel.transports.remote_server import RemoteServer
from tests.support import stays_true

BOUND_S = 15.0
"""Seconds the unclaimed kernel may live on: a kill through the server (its orphan timer is 60 s)."""


@pytest.mark.hermes_transports("docker", "ssh")
def test_ctrl_c_as_the_spawn_request_goes_out_ends_the_forked_kernel(hermes_transport, monkeypatch):
    send_frame = RemoteServer.send_frame

    def send_then_ctrl_c(server: RemoteServer, header: dict[str, Any], blobs: tuple[bytes, ...] = ()) -> None:
        send_frame(server, header, blobs)
        if header.get("type") == "spawn":
            signal.raise_signal(signal.SIGINT)

    started: list[str] = []
    launch = hermes_transport.launch

    def launch_noting_the_id(spec: Any) -> Any:
        started.append(spec.kernel_id)
        return launch(spec)

    monkeypatch.setattr(RemoteServer, "send_frame", send_then_ctrl_c)
    monkeypatch.setattr(hermes_transport, "launch", launch_noting_the_id)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            start_kernel(hermes_transport)
    finally:
        signal.signal(signal.SIGINT, previous)
        monkeypatch.setattr(RemoteServer, "send_frame", send_frame)
    [kernel_id] = started

    def running() -> list[str]:
        return hermes_transport.kernel_processes(kernel_id, None)

    # gone for good (the first looks may come before the fork), within the bound: it ran 60 s
    wait_until(lambda: stays_true(lambda: not running(), 2.0), BOUND_S,
               what=f"kernel {kernel_id}, forked for a launch Ctrl-C left, to end")
