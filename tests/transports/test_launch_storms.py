"""Launch storms and failed launches on the stream transports (docker, ssh): issue #9 point 5.

32 kernels started at once over one transport (one ssh connection, one container) all start,
and a launch that fails after its runner started leaves no process behind. Before the fix,
ssh lost the runner's ``ready`` line now and then under concurrency (sshd sent the exit status
before the output) and the failed launch left its runner alive until its orphan timer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_hermes_kernel import KernelHandle, KernelOptions
from pytest_hermes_kernel.errors import KernelServerUnavailable, KernelStartError
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.kernel.contract import Transport

STORM = 32


def _stream_transport(transport: Transport) -> Transport:
    if transport.name not in ("docker", "ssh"):
        pytest.skip(f"launch storms over one connection/container concern docker and ssh, not {transport.name}")
    return transport


def test_32_concurrent_launches_all_start_and_leave_no_runner(hermes_transport: Transport) -> None:
    transport = _stream_transport(hermes_transport)
    handles = [KernelHandle(transport, KernelOptions()) for _ in range(STORM)]

    def first_cell(handle: KernelHandle) -> str | None:
        handle.start()
        return handle.execute("6 * 7").value

    try:
        with ThreadPoolExecutor(max_workers=STORM) as pool:
            values = list(pool.map(first_cell, handles))
        assert values == ["42"] * STORM
    finally:
        locators = {h.kernel_id: transport.locator(h.launched) for h in handles if h.launched is not None}
        for h in handles:
            h.shutdown()
    left = {kid: transport.kernel_processes(kid, loc) for kid, loc in locators.items()}
    assert not {kid: procs for kid, procs in left.items() if procs}, "runners left after shutdown"


@pytest.fixture
def spawn_path(hermes_transport: Transport) -> Iterator[Transport]:
    """The test's stream transport on the spawn path (``server=False``), closed after the test."""
    transport = make_transport(_stream_transport(hermes_transport).name, server=False)
    yield transport
    transport.close()


def test_a_launch_that_fails_after_its_runner_started_leaves_nothing(spawn_path: Transport,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The relay step fails after ``serve --listen`` has started the runner: nothing may stay."""
    transport = spawn_path
    kernel_id = uuid.uuid4().hex
    if transport.name == "docker":
        def no_relay(*_args: object, **_kwargs: object) -> None:
            raise OSError("injected: relay exec refused")

        monkeypatch.setattr(transport, "_relay", no_relay)
    else:
        conn = transport._connection()
        real_open = conn.open_exec

        def open_exec(command: str):  # type: ignore[no-untyped-def]
            if " relay " in command:
                raise OSError("injected: relay channel refused")
            return real_open(command)

        monkeypatch.setattr(conn, "open_exec", open_exec)
    handle = KernelHandle(transport, KernelOptions(), kernel_id=kernel_id)
    with pytest.raises(KernelStartError, match="injected"):
        handle.start()
    monkeypatch.undo()
    assert transport.kernel_processes(kernel_id) == [], "the failed launch left its runner running"


def test_a_server_gone_right_after_it_forked_leaves_only_the_spawned_kernel(hermes_transport: Transport,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel server forks the kernel and is gone before the host has it: the launch falls back
    to a plain spawn (said in ``kernel.note``) and the forked runner does not stay behind."""
    transport = _stream_transport(hermes_transport)
    from pytest_hermes_kernel.transports.remote_server import RemoteServer

    real_spawn = RemoteServer.spawn

    def spawn_then_die(self: RemoteServer, config: dict, *args, **kwargs):  # type: ignore[no-untyped-def]
        real_spawn(self, config, *args, **kwargs)
        self.close()
        raise KernelServerUnavailable("injected: the server went away after the fork")

    monkeypatch.setattr(RemoteServer, "spawn", spawn_then_die)
    handle = KernelHandle(transport, KernelOptions())
    try:
        handle.start()
        monkeypatch.undo()
        first = handle.execute("6 * 7")
        assert first.value == "42" and "injected: the server went away" in first.kernel.note
        pids = {int(line.split(":")[0]) for line in transport.kernel_processes(handle.kernel_id)}
        assert pids == {handle.runner_pid, handle.pid}, "only the spawned runner and its worker may run"
    finally:
        handle.shutdown()
    assert transport.kernel_processes(handle.kernel_id) == []


def test_past_the_session_limit_a_channel_waits_its_turn_then_names_the_limit(hermes_transport: Transport) -> None:
    """An sshd allows ``MaxSessions`` channels per connection (10 by default): the connection
    waits for a free one instead of failing, and when none comes free the error names the limit."""
    if hermes_transport.name != "ssh":
        pytest.skip("ssh sessions only exist on the ssh transport")
    import threading

    from pytest_hermes_kernel.errors import TransportLostError
    from pytest_hermes_kernel.transports.ssh.connection import SshConnection

    conn = SshConnection(hermes_transport._connection().target, max_sessions=2, session_wait=1.0,
                         **_auth_of(hermes_transport))
    try:
        first, second = conn.open_exec("sleep 30"), conn.open_exec("sleep 30")
        with pytest.raises(TransportLostError, match="all 2 ssh sessions .* MaxSessions"):
            conn.open_exec("true")
        threading.Timer(0.3, first.close).start()
        code, out, _ = conn.run("echo waited", timeout=10.0)  # waits for `first` to close
        assert (code, out) == (0, b"waited\n")
        second.close()
    finally:
        conn.close()


def _auth_of(transport: Transport) -> dict:
    """The run's sshd container key, as the transport itself connects with it."""
    from pytest_hermes_kernel.containers.keys import load_private_key

    record = transport.sshd.join()  # type: ignore[attr-defined]
    with open(record["key_file"], encoding="ascii") as fh:
        return {"pkey": load_private_key(fh.read()), "host_key": record["host_key"]}
