"""Handed case B34: leaked ssh channels exhaust sshd's ``MaxSessions`` after about ten commands
or cells (paramiko/paramiko#528, #2346: a channel stays open until its streams are garbage;
ronf/asyncssh#244, alpha-unito/streamflow#229: more than ten at once fail).

The scenario runs against an sshd with the default limit of 10 sessions per connection (the
kit's own sshd container allows 64, so this module starts one and puts the default back), with
one connection, and keeps a reference to every result so nothing is garbage-collected:
50 execute-only commands in a row, 12 at once, and kernel cells interleaved with SFTP
transfers. No command may be refused, and the channels open on the connection must come back
to what the kernel itself holds after each step.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.containers.keys import generate_keypair
from pytest_hermes_kernel.errors import TransportLostError
from pytest_hermes_kernel.transports.filecell.ssh_exec import SshExecBackend
from pytest_hermes_kernel.transports.ssh.transport import DEFAULT_MAX_SESSIONS, SshTransport
from tests.support import container_output, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: OpenSSH's default ``MaxSessions``; the transport's default for a ``target=`` host matches it.
SSHD_DEFAULT_MAX_SESSIONS = 10


def _effective_max_sessions(client, container_id: str) -> str:  # noqa: ANN001 - docker-py
    config = container_output(client, container_id, ["/usr/sbin/sshd", "-T"])
    return next(line.split()[1] for line in config.splitlines() if line.startswith("maxsessions "))


@pytest.fixture(scope="module")
def default_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshTransport]:
    """An ssh transport on an sshd container whose ``MaxSessions`` is OpenSSH's default (10)."""
    import docker

    from pytest_hermes_kernel.containers.images import ensure_image
    from pytest_hermes_kernel.containers.lifecycle import remove_container, start_sshd

    client = docker.from_env()
    private, public = generate_keypair()
    endpoint = start_sshd(image=ensure_image(client), run_id=f"b34-{uuid.uuid4().hex[:10]}", worker_id="b34",
                          authorized_key=public)
    transport = None
    try:
        # the kit's drop-in sets 64; without it sshd runs with its compiled-in default
        container_output(client, endpoint.container_id,
                         ["sh", "-c", "sed -i '/^MaxSessions/d' /etc/ssh/sshd_config.d/*.conf"])
        assert _effective_max_sessions(client, endpoint.container_id) == str(SSHD_DEFAULT_MAX_SESSIONS)
        client.api.kill(endpoint.container_id, "HUP")  # sshd re-executes itself with the file as it is now
        key = tmp_path_factory.mktemp("b34") / "id_ed25519"
        key.write_text(private)
        key.chmod(0o600)
        host_key = " ".join(container_output(client, endpoint.container_id,
                                             ["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).split()[:2])
        transport = SshTransport(target=f"{endpoint.user}@{endpoint.host}:{endpoint.port}", key_filename=str(key),
                                 host_key=host_key)
        wait_until(lambda: _answers(transport), 15.0, what="sshd to answer again after its reload")
        yield transport
    finally:
        if transport is not None:
            transport.close()
        remove_container(endpoint.container_id, client=client)
        client.close()


def _answers(transport: SshTransport) -> bool:
    try:
        return transport._connection().run("true", timeout=5.0)[0] == 0
    except Exception:  # noqa: BLE001 - still reloading
        return False


def _open(transport: SshTransport) -> dict[int, str]:
    return transport._connection().open_channels()


def _own_connection(transport: SshTransport, **options: object):  # noqa: ANN202 - SshConnection
    from pytest_hermes_kernel.transports.ssh.connection import SshConnection

    return SshConnection(transport.target, key_filename=transport.key_filename, host_key=transport.host_key, **options)


def test_the_server_refuses_the_eleventh_session_so_the_scenario_can_fail(default_sshd: SshTransport) -> None:
    """The fixture's sshd really has the default limit: a client that does not count its sessions
    is refused the eleventh (paramiko's ``ChannelException``). A connection of its own: the limit
    is per connection, and the transport's must not inherit sessions it does not count."""
    import paramiko

    conn = _own_connection(default_sshd)
    try:
        held = [conn.transport.open_session(timeout=5.0) for _ in range(SSHD_DEFAULT_MAX_SESSIONS)]
        with pytest.raises(paramiko.ChannelException):
            conn.transport.open_session(timeout=5.0)
        del held
    finally:
        conn.close()


def test_a_session_closed_while_its_command_runs_is_waited_for_not_refused(default_sshd: SshTransport,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    """paramiko counts a channel closed when it sends its close; sshd frees the session only when
    the command ends. The next open at the limit waits for that instead of failing (it was
    refused with ``ChannelException(2, 'Connect failed')``, as the twelve-at-once case was now and
    then), and the wait logs no ERROR (paramiko logged one per refused open)."""
    conn = _own_connection(default_sshd, max_sessions=SSHD_DEFAULT_MAX_SESSIONS, session_wait=20.0)
    try:
        held = [conn.open_exec("sleep 2") for _ in range(SSHD_DEFAULT_MAX_SESSIONS)]
        held[0].close()  # its sleep still runs on the host, holding the session
        assert conn.run("echo next", timeout=20.0) == (0, b"next\n", b"")
    finally:
        conn.close()
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []


def test_a_server_limit_below_max_sessions_is_named_once_the_wait_is_over(default_sshd: SshTransport) -> None:
    conn = _own_connection(default_sshd, max_sessions=SSHD_DEFAULT_MAX_SESSIONS + 1, session_wait=1.0)
    try:
        held = [conn.open_exec("sleep 30") for _ in range(SSHD_DEFAULT_MAX_SESSIONS)]
        with pytest.raises(TransportLostError, match=r"refused: .*Connect failed.*\(retried for 1\.\d s while this "
                           r"connection held 10 sessions: the server's MaxSessions may be below max_sessions=11"):
            conn.open_exec("true")
        del held
    finally:
        conn.close()


def test_fifty_execute_only_commands_in_a_row_with_every_result_kept(default_sshd: SshTransport) -> None:
    assert DEFAULT_MAX_SESSIONS == SSHD_DEFAULT_MAX_SESSIONS
    backend = SshExecBackend.over(default_sshd)
    results = [backend.execute(f"echo {i}", 10.0) for i in range(50)]

    assert results == [(0, f"{i}\n") for i in range(50)]
    assert _open(default_sshd) == {}, "every command's channel is closed when it returns"


def test_twelve_execute_only_commands_at_once_wait_their_turn(default_sshd: SshTransport) -> None:
    backend = SshExecBackend.over(default_sshd)
    results: dict[int, tuple[int, str] | BaseException] = {}
    start = threading.Barrier(12)

    def one(i: int) -> None:
        start.wait()
        try:
            results[i] = backend.execute(f"sleep 0.5; echo {i}", 20.0)
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60.0)

    assert results == {i: (0, f"{i}\n") for i in range(12)}
    assert _open(default_sshd) == {}


@pytest.mark.parametrize("server", [True, False], ids=["kernel-server", "spawn"])
def test_cells_interleaved_with_sftp_transfers(default_sshd: SshTransport, tmp_path: Path, server: bool) -> None:
    transport = default_sshd if server else SshTransport(target=str(default_sshd.target),
                                                         key_filename=default_sshd.key_filename,
                                                         host_key=default_sshd.host_key, server=False)
    kernel = KernelHandle(transport).start()
    try:
        baseline = _open(transport)  # what the kernel itself holds (its relay channel on the spawn path)
        kept = []
        for i in range(15):
            kept.append(kernel.execute(f"n = {i}; open('cell.txt', 'w').write(str(n) * 1000)"))
            source = tmp_path / f"up-{i}.txt"
            source.write_text(f"upload {i}")
            kept.append(kernel.upload(source, f"up-{i}.txt"))
            kept.append(kernel.download("cell.txt", tmp_path / f"down-{i}.txt"))
            assert (tmp_path / f"down-{i}.txt").read_text() == str(i) * 1000
            assert _open(transport) == baseline, f"round {i}"
        last = kernel.execute("sorted(f for f in __import__('os').listdir() if f.startswith('up-'))[-1], n")
        assert (last.status, last.value) == ("ok", "('up-9.txt', 14)"), last.summary()
    finally:
        kernel.shutdown()
        if transport is not default_sshd:
            transport.close()
