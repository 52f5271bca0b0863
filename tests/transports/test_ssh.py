"""SSH transport: kernels detached on an ssh host (an sshd container here) (B23, B25).

Remote pids are checked on the ssh host over a *new* connection, never in the host's process
table. Tests that pause or kill sshd get their own sshd container (their own ``run_id``), so
other tests, and other xdist workers, keep theirs. Re-attach after a dropped stream is part of
the contract suite (``pytest_hermes_kernel/contract/reattach.py``, run with
``--hermes-transport=ssh tests/contract``); what stays here is ssh's own: a lost connection.
"""

from __future__ import annotations

import shlex
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.containers.keys import load_private_key
from pytest_hermes_kernel.faults.harness import HarnessKernel
from pytest_hermes_kernel.transports import get_transport, make_transport
from pytest_hermes_kernel.transports.detached import ALIVE_SCRIPT
from pytest_hermes_kernel.transports.runner_zipapp import runner_zipapp
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from pytest_hermes_kernel.transports.ssh.connection import SshConnection, SshTarget
from tests.support import CellStarted, run_in_thread, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.fixture
def ssh() -> SshTransport:
    """The session's shared ssh transport (one sshd container for the run)."""
    transport = get_transport("ssh")
    assert isinstance(transport, SshTransport)
    return transport


@pytest.fixture
def own_sshd() -> Iterator[SshTransport]:
    """An ssh transport with an sshd container of its own (removed when it closes)."""
    transport = make_transport("ssh", run_id=f"test-{uuid.uuid4().hex}")
    assert isinstance(transport, SshTransport)
    yield transport
    transport.close()


def _sshd(transport: SshTransport) -> dict:
    transport._connection()  # connects, starting the sshd container when needed
    assert transport.sshd is not None and transport.sshd.record is not None
    return transport.sshd.record


def _fresh_connection(transport: SshTransport) -> SshConnection:
    record = _sshd(transport)
    with open(record["key_file"], encoding="ascii") as fh:
        pkey = load_private_key(fh.read())
    return SshConnection(SshTarget(record["host"], record["port"], record["user"]), pkey=pkey,
                         host_key=record["host_key"])


def _remote_alive(transport: SshTransport, pid: int) -> bool:
    """``pid`` runs on the ssh host, checked over a new SSH connection."""
    conn = _fresh_connection(transport)
    try:
        code, _, _ = conn.run(f"python3 -c {shlex.quote(ALIVE_SCRIPT)} {pid}")
    finally:
        conn.close()
    return code == 0


def test_state_persists_in_a_kernel_on_the_ssh_host(ssh, start):
    k = start(ssh)
    k.execute("import os\nx = 41")

    r = k.execute("x + 1, os.getcwd(), os.environ['HERMES_KERNEL_ID']")

    assert r.status == "ok"
    assert r.value == f"(42, '/home/hermes/.hermes-kernels/{k.kernel_id}', '{k.kernel_id}')"


def test_kernel_dir_is_private_and_keeps_no_env_file(ssh, start):
    k = start(ssh)

    runner = runner_zipapp().name  # hermes-runner-<hash12>.pyz

    r = k.execute(f"import os\n(oct(os.stat('.').st_mode & 0o777), oct(os.stat({runner!r}).st_mode & 0o777),"
                  " sorted(os.listdir('.')), os.environ['HOME'])")

    files = sorted([runner, "runner.log", "runner.pid", "sock"])
    assert r.value == f"('0o700', '0o600', {files!r}, '/home/hermes')"


def test_the_channel_is_not_the_kernels_stdin(ssh, start):
    k = start(ssh)

    r = k.execute("input()", timeout=10)

    assert r.status == "error" and r.ename == "EOFError"


def test_interrupt_of_a_long_sleep_arrives(ssh, start):
    """B25 (c): no SSH "signal" request; the supervisor signals the worker on the remote host."""
    started = CellStarted()
    k = start(ssh, tools=started.tools())
    k.execute("import time\nkept = 'yes'")
    fut = run_in_thread(k, started.CODE + "time.sleep(600)")
    started.wait()

    k.interrupt()
    r = fut.result(timeout=60)  # (an interrupt that never arrives leaves the 600-s sleep running)

    # the interrupt ended it; how soon (the case's "within 2 s") is benchmarks/handed_bounds.py's figure
    assert r.status == "interrupted" and r.ename == "KeyboardInterrupt", r.summary()
    assert k.execute("kept").value == "'yes'"


def test_close_ends_the_remote_kernel(ssh, start):
    """B25 (a): the remote pid is gone (checked over a new connection) within 5 s of close()."""
    k = start(ssh)
    remote = int(k.execute("import os\nx = 1\nos.getpid()").value)
    runner = k.runner_pid
    assert _remote_alive(ssh, remote)

    k.close()

    wait_until(lambda: not _remote_alive(ssh, remote) and not _remote_alive(ssh, runner), 5.0,
               what="the remote kernel to end")
    assert ssh.kernel_processes(k.kernel_id) == []


def test_host_sigkill_remote_kernel_exits_within_orphan_timeout(ssh):
    """B25 (b): the client process owning the paramiko connection is SIGKILLed."""
    _sshd(ssh)  # this process joins the run's sshd container first; the harness shares it
    harness = HarnessKernel("ssh", {"orphan_timeout": 2.0})
    try:
        assert harness.execute("import os\nos.getpid()").value == str(harness.pid)
        assert _remote_alive(ssh, harness.pid)

        harness.kill_host()
        left = harness.wait_kernel_gone(2.0 + 3.0)
    finally:
        harness.shutdown()

    assert left == []
    assert not _remote_alive(ssh, harness.pid)


def test_paused_sshd_mid_cell_reports_transport_lost_within_keepalive_bound(own_sshd, start):
    """B23 (i): ``docker pause`` black-holes the connection (no FIN, no RST)."""
    started = CellStarted()
    k = start(own_sshd, tools=started.tools())
    k.execute("a = 1")
    fut = run_in_thread(k, started.CODE + "import time\ntime.sleep(120)", timeout=300)
    started.wait()
    cid = own_sshd.sshd_container_id
    bound = own_sshd.keepalive_interval * own_sshd.keepalive_missed + 3.0  # 3 s x 3 + 3 = 12 s

    paused = time.monotonic()
    own_sshd.sshd.docker.api.pause(cid)
    try:
        r = fut.result(timeout=60)
        took = time.monotonic() - paused
    finally:
        own_sshd.sshd.docker.api.unpause(cid)

    assert r.status == "died" and r.kernel.reason == "transport_lost", r.summary()
    assert took <= bound, f"took {took:.1f} s"
    k2 = start(own_sshd)  # after unpause a new kernel works
    assert k2.execute("6 * 7").value == "42"


def test_killed_sshd_mid_cell_reports_transport_lost(own_sshd, start):
    """B23 (ii): ``docker kill`` of the sshd container."""
    started = CellStarted()
    k = start(own_sshd, tools=started.tools())
    fut = run_in_thread(k, started.CODE + "import time\ntime.sleep(120)", timeout=300)
    started.wait()

    killed = time.monotonic()
    own_sshd.sshd.docker.api.kill(own_sshd.sshd_container_id)
    r = fut.result(timeout=60)

    assert r.status == "died" and r.kernel.reason == "transport_lost", r.summary()
    assert time.monotonic() - killed <= 12.0


def test_lost_connection_reconnects_for_the_next_cell(ssh, start):
    k = start(ssh)
    k.execute("x = 'kept'")

    ssh._connection().close()  # the whole SSH connection, not just the relay channel
    r = k.execute("x")

    assert r.value == "'kept'" and r.kernel.reconnected


def test_a_probe_on_a_connection_found_dead_reconnects_and_runs(ssh, start, monkeypatch):
    k = start(ssh)
    dead = ssh._connection()

    def eof(*args, **kwargs):
        raise EOFError()  # what paramiko raises when its transport dies while a channel opens

    monkeypatch.setattr(dead.transport, "open_session", eof)  # it still says is_active()
    if ssh.servers is not None:  # the scan by exec, not by the kernel server's channel (still open)
        monkeypatch.setattr(ssh.servers, "running", lambda where: None)
    assert ssh.kernel_processes(k.kernel_id), "the probe must reconnect and see the kernel's processes"
    assert ssh.current_connection is not dead
    assert k.execute("1 + 1").value == "2"


def test_explicit_target_with_unknown_host_key_is_rejected(ssh, tmp_path):
    record = _sshd(ssh)
    target = f"{record['user']}@{record['host']}:{record['port']}"
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    transport = make_transport("ssh", target=target, key_filename=record["key_file"], known_hosts=str(empty))
    try:
        with pytest.raises(KernelStartError, match="not found in known_hosts"):
            start_kernel(transport).shutdown()
    finally:
        transport.close()


def test_explicit_target_with_known_host_key_works(ssh, start, tmp_path):
    record = _sshd(ssh)
    known = tmp_path / "known_hosts"
    known.write_text(f"[{record['host']}]:{record['port']} {record['host_key']}\n")
    transport = make_transport("ssh", target=f"{record['user']}@{record['host']}:{record['port']}",
                               key_filename=record["key_file"], known_hosts=str(known))
    try:
        k = start(transport)
        assert k.execute("1 + 1").value == "2"
        k.shutdown()
    finally:
        transport.close()


def test_explicit_target_that_refuses_the_key_says_authentication_failed(ssh, tmp_path):
    """A good key the host does not accept read ``SSHException: Invalid key`` (paramiko's try of
    another key type on the file), not the host's refusal."""
    record = _sshd(ssh)
    other = tmp_path / "id_other"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(other)], check=True)
    transport = make_transport("ssh", target=f"{record['user']}@{record['host']}:{record['port']}",
                               key_filename=str(other), host_key=record["host_key"])
    try:
        with pytest.raises(KernelStartError, match="AuthenticationException: Authentication failed"):
            start_kernel(transport).shutdown()
    finally:
        transport.close()


def test_the_ssh_connection_sends_each_frame_at_once(ssh, start):
    """Nagle's algorithm off on the connection's TCP socket: a frame sent right behind another
    (a shutdown's channel close, then its kernel dir's removal) waited for sshd's delayed ACK, and
    every ssh shutdown took about 50 ms instead of 5 (benchmarks/run.py's ``shutdown_p50``)."""
    import socket

    start(ssh).execute("1")
    sock = ssh.connection().transport.sock
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
