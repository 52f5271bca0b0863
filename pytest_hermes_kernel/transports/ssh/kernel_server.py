"""The ssh transport's kernel servers: one per connection and interpreter, started with one exec.

The server (``kernel/runner/server_remote.py``) runs from its own 0700 dir
``~/.hermes-kernels/server-<random>`` (the runner file, put there over SFTP once; its log), with
the login's own environment plus the kernel markers, its ``HERMES_KERNEL_ID`` being the slot each
forked kernel writes its own id over. Its exec channel is the stream every kernel of the
connection rides (:class:`~..remote_server.MuxStream`): a kernel start is one message, no exec
and no ssh session of its own (``MaxSessions`` no longer bounds how many kernels run at once). A
kernel dir it makes is ``~/.hermes-kernels/<kernel_id>`` as on the spawn path, with a link to the
runner file, so re-attach (a relay exec channel), kill and the probes work the same on both paths.
When the connection dies, so does the server's channel: the server exits, its kernels live on
their orphan timers, the handle re-attaches as before, and the next launch starts a new server.
A server that died without removing its dir (SIGKILL, a host reboot) leaves it to the next server
that starts there, which removes it once no process works in it.
"""

from __future__ import annotations

import json
import shlex
import uuid
from typing import Any, Protocol

from ...errors import KernelServerUnavailable, TransportLostError, UnsafeRunDirError
from ...kernel.contract import Launched, LaunchSpec
from ...kernel.runner.environ import SERVER_KERNEL_ID
from ..detached import launch_env, runner_config
from ..far_records import MadeDirs
from ..remote_server import RemoteServer
from ..server_pool import ServerPool
from .address import unreachable_error
from .connection import SshConnection, SshStream
from .probes import end_failed_launch, remove_kernel_dir, server_stopped
from .rundir import KERNEL_ROOT, login_home, private_root, put_runner
from .spawning import refuse_if_closed
from .sshd import SshdContainer

SERVER_DIR_PREFIX = "server-"


class SshSide(Protocol):
    """What the servers need of the ssh transport."""

    python: str
    orphan_timeout: float | None
    closed: bool
    sshd: SshdContainer | None
    _home: str | None
    made_dirs: MadeDirs

    def _connection(self, *, probe: bool = False) -> SshConnection: ...

    def run_script(self, conn: SshConnection, script: str, *args: str,
                   python: str | None = None) -> tuple[int | None, bytes]: ...


def server_pool(transport: SshSide, idle_timeout: float | None) -> ServerPool:
    """The pool of ``transport``'s servers (see module docstring)."""
    return ServerPool(lambda _where, python: start_server(transport, transport._connection(), python, idle_timeout))


def start_server(transport: SshSide, conn: SshConnection, python: str, idle_timeout: float | None) -> RemoteServer:
    """Put the runner into a new server dir over SFTP, start the server with one exec, wait for its hello.

    :raises KernelServerUnavailable: if it cannot be started or does not answer.
    :raises KernelStartError: if the transport was closed meanwhile (no server starts for it then).
    """
    refuse_if_closed(transport, during=True)
    try:
        sftp = conn.sftp()
        try:
            transport._home = login_home(conn, sftp)
            root = private_root(sftp, transport._home)
            sdir = f"{root}/{SERVER_DIR_PREFIX}{uuid.uuid4().hex[:16]}"
            runner = put_runner(sftp, sdir)
        finally:
            close_sftp(sftp)
        q = shlex.quote
        exports = " ".join(f"{name}={q(value)}" for name, value in launch_env(SERVER_KERNEL_ID).items())
        chan = conn.open_exec(f"cd {q(sdir)} && export {exports} && exec {q(python)} -B {q(runner)} server --stdio", shared=True)
    except UnsafeRunDirError as exc:
        raise KernelServerUnavailable(f"could not start a kernel server on {conn.target}: {exc}") from None
    except Exception as exc:
        raise _not_started(conn, exc) from None
    config = {"idle_timeout": idle_timeout, "server_dir": sdir, "runner": runner, "log": f"{sdir}/server.log",
              "sweep_siblings": True,  # the dirs of servers that died without removing theirs
              "spare": transport.sshd is None or transport.sshd.mem_limit_bytes is None}  # (as docker's)
    try:
        return RemoteServer(ServerStream(chan, conn), name=f"ssh {conn.target}", config=config)
    except KernelServerUnavailable:
        if chan.exit_status_ready():  # it ended (no such interpreter, one too old): nothing works in its dir,
            remove_kernel_dir(conn, sdir)  # and no server may start there to sweep it (one dir a start, before)
        raise


def _not_started(conn: SshConnection, exc: Exception) -> KernelServerUnavailable:
    """What a server's start that failed says (the start falls back to a plain spawn, its note saying it).

    A link cut while the server's files went out over SFTP (a dropped link, sshd restarted) let
    paramiko's ``EOFError`` or ``SSHException`` out of ``start_kernel`` as they were (the same cut
    in a kernel dir's put, :func:`.rundir.make_kernel_dir`, says so): it names the cut now, and
    ``conn`` is closed, so the spawn after it (:func:`live_connection`) and the next start connect anew.

    :raises Exception: ``exc`` itself, if it is none of a refusal or a cut link (a bug: its traceback).
    """
    import paramiko

    cut = isinstance(exc, (EOFError, paramiko.SSHException)) or (isinstance(exc, OSError) and not conn.usable)
    if cut:
        conn.close()  # seen dead now (it could still be taken, and its sftp failed)
        return KernelServerUnavailable(f"the ssh connection to {conn.target} was cut while its kernel server was "
                                       f"started ({type(exc).__name__}: {exc})")
    if isinstance(exc, OSError):  # (TransportLostError too) the host answered: what it refused
        return KernelServerUnavailable(f"could not start a kernel server on {conn.target}: {exc}")
    raise exc


def close_sftp(sftp: Any) -> None:
    """Close an SFTP session; on a cut link its close raises ``EOFError``, which is not what went wrong."""
    try:
        sftp.close()
    except Exception:  # noqa: BLE001 - the error that ended its use (or none) is the one to report
        pass


class ServerStream(SshStream):
    """The server's exec channel as a stream, read without ``select``.

    paramiko gives every channel that is ``select``-ed a pipe pair, and this channel outlives every
    test (the leak check would count the pipe); a blocking read returns at EOF, and when the
    connection is closed (its keepalive check closes a silent one).
    """

    def recv(self, timeout: float | None) -> bytes:
        if timeout is not None:
            return super().recv(timeout)
        try:
            return self.chan.recv(1 << 20)
        except (EOFError, OSError):
            return b""


def fork_on_host(transport: SshSide, pool: ServerPool, conn: SshConnection, spec: LaunchSpec) -> Launched:
    """A kernel forked by the connection's server (see module docstring).

    :raises KernelServerUnavailable: if no server could fork it.
    """
    python = spec.python or transport.python
    asked: list[RemoteServer] = []  # servers the request was made for: none if no server could start

    def config(server: RemoteServer) -> dict[str, Any]:
        asked.append(server)
        kdir = f"{(server.hello or {}).get('home')}/{KERNEL_ROOT}/{spec.kernel_id}"
        transport.made_dirs.add(str(conn.target), kdir)  # as on the spawn path: the leak probe checks it is gone
        return json.loads(runner_config(spec, kdir, transport.orphan_timeout))

    try:
        pid, stream, runner, server = pool.spawn(str(conn.target), python, config, spec.start_timeout,
                                                 frozen=lambda server: server_stopped(conn, server))
    except KernelServerUnavailable:  # the server may have forked it before it went: nothing may stay
        if asked:  # (with no server, nothing was forked: the kill's script, run where none could start, said
            kdir = f"{transport._home}/{KERNEL_ROOT}/{spec.kernel_id}" if transport._home else ""  # "could not end")
            end_failed_launch(transport, live_connection(transport, conn), kdir, spec.kernel_id, python)
        raise
    kdir = config(server)["kernel_dir"]
    if isinstance(server.stream, SshStream):  # the connection the server (and so the kernel's channel) rides
        conn = server.stream.connection
    return Launched(stream=stream, pid=pid, kernel_dir=kdir,
                    label=f"ssh {conn.target} pid {pid}, forked by kernel server {server.pid}",
                    extra={"conn": conn, "python": python, "runner": runner, "server": server})



def live_connection(transport: SshSide, conn: SshConnection, *, starting: bool = False) -> SshConnection:
    """``conn`` while it is usable, else a new connection: the one a start began on was cut (a
    dropped link, sshd restarted) while its server forked the kernel, and the failed fork's kill
    and the plain spawn after it need one that works (on the cut one the kill could not run, and
    the spawn failed with ``sftp ... failed: SSH session not active``). A host that cannot be
    reached now: ``conn``, whose use then fails naming the connection down, as before.

    :param starting: for the spawn of a kernel: a transport closed meanwhile starts none.
    :raises KernelStartError: if ``starting`` and the transport was closed, or no new connection
        could be made (the reason and its hint).
    """
    if starting:  # (it said "SSH session not active", or the sftp's "Failure")
        refuse_if_closed(transport, during=True)
    if conn.usable:
        return conn
    try:
        return transport._connection()
    except TransportLostError as exc:
        if starting:
            raise unreachable_error(exc) from None
        return conn
