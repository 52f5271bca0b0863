"""SSH transport: kernel runners detached on an ssh host, reached through exec channels.

One kernel: SFTP puts the runner into a 0700 kernel dir ``~/.hermes-kernels/<kernel_id>``, an
exec channel starts ``python3 -B <dir>/hermes-runner-<hash>.pyz serve --listen <dir>/sock`` with
the config JSON on the channel's stdin (then EOF); the runner daemonizes into its own session and
prints ``ready <pid>``. The channel is a second exec channel running ``<runner file> relay
<dir>/sock`` (:class:`~.ssh_connection.SshStream`). The kernel's environment travels in the
config (the worker applies it); the start command adds only ``HERMES_KERNEL_ID`` to the login's
own environment, so no name a user passes changes how the runner starts.

Nothing relies on the SSH ``signal`` request (OpenSSH before 7.9 ignores it, paramiko#203) or on
closing a channel (without a PTY that kills nothing, paramiko#785): interrupts travel on the
channel to the supervisor, :meth:`SshTransport.kill` SIGKILLs the runner's session from a new
exec channel, and a runner nobody attaches to for ``orphan_timeout`` seconds ends itself.

A dead connection is found by :class:`~.ssh_connection.SshConnection`'s keepalives with replies.
Once keepalives (or a connect) went unanswered, the host is *silent* for ``keepalive_interval *
keepalive_missed`` seconds: probes (``reattach``, ``alive``, ``kill``, ``cleanup``, the leak
probe's scan) do not each wait for a connect timeout. A probe then tries a new connection at most
once per :data:`SILENT_RETRY_S` seconds (the first at once after keepalives gave up: the flow may
have stalled, a NAT that dropped it, while the host answers), bounded by :data:`SILENT_CONNECT_S`, and fails at once
otherwise (``reattach`` with a permanent :class:`TransportLostError`, so the running cell
reports ``transport_lost`` right away): a dead host costs one short try now and then. The probes
that end a runner (``kill``, ``cleanup``) share a short try of their own, at once after the
keepalives gave up and then once per :data:`SILENT_RETRY_S`: a host that came back (an unpaused
sshd) is reached by the kill right after it (a refused kill leaves the runner until its orphan
timer), and a dead one costs the kills of many kernels one short try, not one each. ``alive``
refused on a silent host says ``False`` (it cannot tell) and ``seen_gone`` says ``False`` too, so the
core never counts that runner dead (a timed-out cell is ``abandoned``, not reset); ``cleanup`` kills
a runner not seen gone before it removes its dir, and what it cannot reach the kernel's next launch
ends (:mod:`.ending`). ``launch`` always tries a fresh connection.

With no ``target``, the transport runs an sshd container, shared by the run and with its host
key pinned (:class:`~.sshd.SshdContainer`).
"""

from __future__ import annotations

import shlex
import threading
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ...errors import (ConfigError, ContainerGoneError, ExecNotStartedError, KernelStartError, TransportLostError,
                       UnsafeRunDirError)
from ...kernel.channel import lease
from ...kernel.contract import Launched, LaunchSpec, Transport
from ...kernel.control import despite_signals
from ...kernel.options import check_options
from ..detached import LOG_TAIL_LINES
from ..far_records import LeftBehind, MadeDirs
from ..script_pythons import ScriptPythons
from ..runner_zipapp import runner_zipapp
from ...containers.reuse import ReusePolicy
from ...containers.sharing import current_run_id
from ..local_server import DEFAULT_SERVER_IDLE_TIMEOUT_S
from ..forked import forked_exit_status, with_fallback
from .address import unreachable_error as _unreachable  # (tests import it from here)
from .connection import HostKeyPolicy, SshConnection, SshStream, SshTarget
from .credentials import read_host_key, read_key_file
from .files import SftpFiles
from .kernel_server import fork_on_host, live_connection, server_pool
from . import ending, keep, probes, spawning
from .probes import PROBE_TIMEOUT, end_failed_launch
from .rundir import make_kernel_dir
from .spawning import refuse_if_closed, relay_command, start_runner
from .silence import SILENT_CONNECT_S, SILENT_RETRY_S, Silence  # noqa: F401  # the numbers are read here too
from .sshd import CONTAINER_MAX_SESSIONS, SshdContainer

if TYPE_CHECKING:
    import paramiko

#: OpenSSH's default ``MaxSessions`` (sshd_config(5)), assumed for a ``target=`` host.
DEFAULT_MAX_SESSIONS = 10


class ConnectVia(Protocol):
    """The TCP seam of :class:`SshTransport`: maps sshd's address to the one to dial."""

    def __call__(self, host: str, port: int) -> tuple[str, int]: ...

    def close(self) -> None: ...


class SshTransport(Transport):
    """Kernels on an ssh host (see module docstring).

    :param connect_via: a seam for whoever must sit on the TCP path: called with sshd's
        ``(host, port)`` before each connection, it returns the address to connect to instead
        (the fault layer's :class:`~pytest_hermes_kernel.faults.proxy.ProxyRoute` puts a loopback
        fault proxy there for ``hermes_transport_drop``); its ``close()`` runs with the transport's.
    :param target: ``[user@]host[:port]`` of any sshd (your user name, port 22 if left out); ``None``: an sshd container.
    :param key_filename: private key file for ``target`` (OpenSSH or PEM, no passphrase: for an
        encrypted key pass ``pkey=``), read at each connect.
    :param pkey: a paramiko private key for ``target``.
    :param host_key_policy: for a ``target`` not in known_hosts: ``reject`` (default), ``warn``
        or ``auto-add``.
    :param known_hosts: extra known_hosts file for ``target`` (read, never written).
    :param host_key: ``"<type> <base64>"``: pin this host key for ``target`` (the explicit way to
        trust a host whose key changed); known_hosts and the policy are then not consulted.
    :param keepalive_interval: seconds between keepalive requests (replies wanted).
    :param keepalive_missed: unanswered intervals before the connection counts as dead.
    :param connect_timeout: seconds for connect, banner and authentication each.
    :param max_sessions: channels open at once on the one connection (the server's
        ``MaxSessions``; each kernel holds one); ``None``: OpenSSH's default 10 for a
        ``target``, 64 for the kit's sshd container. Past it a launch waits for a free session.
    :param orphan_timeout: seconds a runner lives with no host attached; ``None`` keeps the
        kernel option's value.
    :param python: interpreter on the ssh host.
    :param image: image of the sshd container (default: the kernel host image).
    :param server: fork kernels from a kernel server on the host (:mod:`.kernel_server`); ``False``
        starts every runner with its own exec channels (the spawn path).
    :param server_idle_timeout: seconds a server without requests and kernels lives on.
    :param reuse: keep the sshd container between runs (``--hermes-reuse``; :mod:`.sshd`); ``None``: off.
    :raises TransportUnavailableError: if no ``target`` is given and no docker engine answers.
    :raises ConfigError: if ``target`` or the ``host_key`` pin cannot be used (each named).
    """

    name: ClassVar[str] = "ssh"
    reattachable: ClassVar[bool] = True
    keepable: ClassVar[bool] = True  # post-mortem: :mod:`.keep`

    def __init__(self, *, target: str | None = None, key_filename: str | None = None,
                 pkey: paramiko.PKey | None = None, host_key_policy: HostKeyPolicy = "reject",
                 known_hosts: str | None = None, keepalive_interval: float = 3.0, keepalive_missed: int = 3,
                 connect_timeout: float = 5.0, orphan_timeout: float | None = None, python: str = "python3",
                 image: str | None = None, run_id: str | None = None, mem_limit_bytes: int | None = None,
                 container: str = "shared", connect_via: ConnectVia | None = None,
                 max_sessions: int | None = None, host_key: str | None = None, server: bool = True,
                 server_idle_timeout: float | None = DEFAULT_SERVER_IDLE_TIMEOUT_S, reuse: ReusePolicy | None = None) -> None:
        import paramiko  # noqa: F401  # fail early (make_transport turns it into TransportUnavailableError)

        check_options("ssh transport", optional=_OPTIONAL,
                      positive_seconds={"keepalive_interval": keepalive_interval, "connect_timeout": connect_timeout},
                      seconds={"orphan_timeout": orphan_timeout, "server_idle_timeout": server_idle_timeout},
                      counts={"keepalive_missed": keepalive_missed, "mem_limit_bytes": mem_limit_bytes,
                              "max_sessions": max_sessions}, commands={"python": python})
        if host_key_policy not in ("reject", "warn", "auto-add"):  # "yes" was read as "reject"
            raise ConfigError(f"ssh transport: host_key_policy must be 'reject', 'warn' or 'auto-add', got {host_key_policy!r}")
        self.target = SshTarget.parse(target) if target else None
        self.key_filename, self.pkey = key_filename, pkey
        if host_key is not None:
            read_host_key(host_key)
        self.host_key_policy, self.known_hosts, self.host_key = host_key_policy, known_hosts, host_key
        self._session_keys = paramiko.HostKeys()  # keys this transport saw: a change is refused (B47)
        self.keepalive_interval, self.keepalive_missed = keepalive_interval, keepalive_missed
        self.connect_timeout = connect_timeout
        self.orphan_timeout = orphan_timeout
        self.python = python
        self.scripts = ScriptPythons(python)  # + the kernels' own (python=): the scripts' where the transport's is missing
        self.run_id = run_id or current_run_id()
        self._lock = threading.Lock()
        self._conn: SshConnection | None = None
        self._home: str | None = None
        self.made_dirs = MadeDirs()  # kernel dirs made on the ssh host(s), for the leak probe
        self.left = LeftBehind()  # what spawned runners said their cells left running, for the leak probe
        self.left_behind: dict[str, str] = {}  # kernel id -> its dir, where a cleanup could not reach (:mod:`.ending`)
        self._silence = Silence(keepalive_interval * keepalive_missed)
        # kernels made through a connection may outlive it: the leak probe connects again to look
        # where none is held now, unless closed (its kernels ended first; its route may be gone)
        self.connected_once, self.closed = False, False
        self.connect_via = connect_via
        self.max_sessions = max_sessions
        if container not in ("shared", "fresh"):
            raise ConfigError(f"container must be 'shared' or 'fresh', not {container!r}")
        if image is not None:  # a name docker refuses reached the user as its 400 at the sshd's start
            from ...containers.image_check import check_image_name

            check_image_name(image, "ssh transport: image ")
        if self.target is not None and mem_limit_bytes is not None:
            raise ConfigError("mem_limit_bytes applies to the sshd container; an explicit target= host has its own limits")
        self.servers = server_pool(self, server_idle_timeout) if server else None
        self.sshd = (SshdContainer(run_id=self.run_id, image=image, mem_limit_bytes=mem_limit_bytes,
                                   fresh=container == "fresh", reuse=reuse) if self.target is None else None)

    @property
    def sshd_container_id(self) -> str | None:
        """The sshd container this instance uses (``None`` with an explicit target)."""
        return None if self.sshd is None else self.sshd.container_id

    # ------------------------------------------------------------------------------ connection
    def _connection(self, *, probe: bool = False, ending: bool = False) -> SshConnection:
        """The live connection, reconnecting when needed.

        :param probe: while the host is known to be silent, one short try per :data:`SILENT_RETRY_S` s, else fail at once.
        :param ending: the probe ends a runner (kill, cleanup): it counts only its own kind's tries.
        :raises TransportLostError: if the host cannot be reached.
        """
        with self._lock:
            conn = self._conn
            if conn is not None and conn.usable:
                return conn
            if conn is not None:
                if conn.unresponsive:
                    self._silence.mark(conn.unresponsive, tried=False)
                conn.close()
                self._conn = None
            timeout = self._silence.connect_timeout(probe, ending=ending)  # raises at once while silent between tries
            try:
                self._conn = self._connect(timeout)
                self.connected_once = True
            except TransportLostError as exc:
                if isinstance(exc, ContainerGoneError):
                    raise
                self._silence.failed(str(exc), timed_out=exc.timed_out, short=timeout is not None)
                raise TransportLostError(str(exc), permanent=exc.permanent or (probe and exc.timed_out),  # a changed
                                         timed_out=exc.timed_out) from None  # host key stays refused
            self._silence.until = 0.0  # it answers again
            self._home = None
            return self._conn

    def _connect(self, timeout: float | None = None) -> SshConnection:
        common = dict(keepalive_interval=self.keepalive_interval, keepalive_missed=self.keepalive_missed,
                      connect_timeout=min(self.connect_timeout, timeout or self.connect_timeout),
                      max_sessions=self.max_sessions or (DEFAULT_MAX_SESSIONS if self.target else CONTAINER_MAX_SESSIONS))
        if self.target is not None:
            # the key file is read at each connect (a kept kernel's record outlives it; it may be
            # rotated), by us: a file that cannot log in is a ConfigError naming it, and a host's
            # refusal of a good key reads as one (paramiko's try of each key type said "Invalid key")
            pkey = self.pkey if self.pkey is not None or self.key_filename is None else read_key_file(self.key_filename)
            dial = None if self.connect_via is None else self.connect_via(self.target.host, self.target.port)
            return _leased(SshConnection(self.target, pkey=pkey, dial=dial,  # dial: a fault proxy's (never dialled)
                                         host_key_policy=self.host_key_policy, known_hosts=self.known_hosts,
                                         host_key=self.host_key, session_keys=self._session_keys, **common))
        assert self.sshd is not None
        return _leased(self.sshd.connect(self.connect_via, **common))

    # ------------------------------------------------------------------------------ launch
    def launch(self, spec: LaunchSpec) -> Launched:
        """Fork the kernel from the connection's kernel server, or start its runner with execs.

        :raises KernelStartError: if it cannot be started, or the transport was closed (before or during the start).
        """
        refuse_if_closed(self)  # whatever keeps its host up (it started kernels while another transport kept the sshd)
        try:
            conn = self._connection()
        except TransportLostError as exc:
            raise _unreachable(exc) from None
        ending.end_left_behind(self, conn, spec.kernel_id)
        pool = self.servers
        fork = None if pool is None else lambda: fork_on_host(self, pool, conn, spec)
        launched = with_fallback(fork, lambda: self._spawn(live_connection(self, conn, starting=True), spec))
        self.scripts.add(str(conn.target), launched.extra.get("python"))
        return launched

    def _spawn(self, conn: SshConnection, spec: LaunchSpec) -> Launched:
        try:
            kdir = make_kernel_dir(self, conn, spec.kernel_id)
        except UnsafeRunDirError as exc:
            raise KernelStartError(f"ssh transport: {exc}") from None
        except TransportLostError as exc:
            refuse_if_closed(self, during=True)  # its close closed the connection: not a cut link
            raise _unreachable(exc, conn) from None
        python = spec.python or self.python
        runner = f"{kdir}/{runner_zipapp().name}"
        try:
            pid = self._start_runner(conn, runner, kdir, spec, python)
            chan = conn.open_exec(relay_command(python, runner, kdir))
        except BaseException as exc:  # whatever failed (Ctrl-C included), end what was started (a second Ctrl-C too)
            despite_signals(lambda: end_failed_launch(self, conn, kdir, spec.kernel_id, python))
            if isinstance(exc, Exception):
                refuse_if_closed(self, during=True)  # (its exec failed: 'SSH session not active', not the runner)
            if isinstance(exc, KernelStartError) or not isinstance(exc, Exception):
                raise
            raise KernelStartError(f"could not start a kernel runner on {conn.target}: {exc}") from None
        return Launched(stream=SshStream(chan, conn), pid=pid, kernel_dir=kdir, label=f"ssh {conn.target} pid {pid}",
                        extra={"conn": conn, "python": python, "runner": runner})

    _start_runner = start_runner  # (a method: a test swaps it per transport)

    # ------------------------------------------------------------------------------ lifecycle
    def reattach(self, launched: Launched) -> SshStream:
        """A new relay channel to the same runner (reconnecting first if the connection died: a
        connection whose keepalives went unanswered gets one short try of a new one at once).

        :raises TransportLostError: if the host is silent (``permanent``), unreachable, or the
            runner or its socket is gone (``permanent``)."""
        conn = self._connection(probe=True)  # after keepalives gave up: one short try at once
        if not self._alive_on(conn, launched):
            raise TransportLostError(f"the kernel runner (pid {launched.pid}) on {conn.target} is gone", permanent=True)
        probes.check_listening_on(self, conn, launched)  # (a cell may have removed its kernel dir)
        chan = conn.open_exec(relay_command(launched.extra["python"], launched.extra["runner"], launched.kernel_dir or ""))
        launched.extra["conn"] = conn
        return SshStream(chan, conn)

    def connection(self) -> SshConnection:
        """The live connection, connecting if needed (at once refused while the host is silent).

        :raises TransportLostError: if the host cannot be reached.
        """
        return self._connection(probe=True)

    @property
    def current_connection(self) -> SshConnection | None:
        """The connection in use now, without connecting (``None`` before the first one)."""
        return self._conn

    def run_script(self, conn: SshConnection, script: str, *args: str, python: str | None = None) -> tuple[int | None, bytes]:
        """Run a python ``script`` with ``args`` on the ssh host, by ``python`` or one there (:mod:`..script_pythons`)."""
        code, out, _ = self.scripts.run(str(conn.target), python, lambda interpreter: conn.run(
            " ".join(shlex.quote(a) for a in (interpreter, "-I", "-c", script, *args)), timeout=PROBE_TIMEOUT))
        return code, out

    def run_probe(self, script: str, *args: str, python: str | None = None, ending: bool = False) -> tuple[int | None, bytes]:
        """:meth:`run_script` on the live connection; again on a new one if it was dead (the script never ran).

        :param ending: the script ends a runner (see :meth:`_connection`).
        :raises TransportLostError: if the host cannot be reached (``permanent`` while it is silent).
        """
        try:
            return self.run_script(self._connection(probe=True, ending=ending), script, *args, python=python)
        except ExecNotStartedError:
            return self.run_script(self._connection(probe=True, ending=ending), script, *args, python=python)

    def _alive_on(self, conn: SshConnection | None, launched: Launched) -> bool:  # None: see run_probe
        args, python = probes.alive_probe(launched), launched.extra.get("python")
        code, _ = self.run_probe(*args, python=python) if conn is None else self.run_script(conn, *args, python=python)
        launched.extra["gone"] = code == 1  # a runner seen gone stays gone: no second probe
        return code == 0

    kill = ending.kill
    alive = ending.alive  # False also when it cannot be told: cleanup ends a runner not seen gone
    seen_gone = ending.seen_gone  # False when it cannot be told: a silent host's runner is never counted dead
    frozen = probes.frozen  # a stopped runner: its shutdown kills it at once (a silent host: cannot tell)
    reap = probes.reap
    was_closed = spawning.was_closed  # a start whose runner's channel its close ended says so
    exit_status = staticmethod(forked_exit_status)  # a forked runner's, as its server saw it; a spawned one's is not known
    cleanup = ending.cleanup

    def close(self) -> None:
        """Close the kernel servers and the connection; leave the shared sshd container (its last user removes it)."""
        self.closed = True
        if self.servers is not None:
            self.servers.close()
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        if self.connect_via is not None:
            self.connect_via.close()
        if self.sshd is not None:
            self.sshd.leave()

    # ------------------------------------------------------------------------------ diagnostics
    def host_log(self, launched: Launched, lines: int = LOG_TAIL_LINES) -> str:
        """The sshd container's log (sshd -e), last ``lines`` lines; ``""`` for a ``target=`` host."""
        return self.sshd.log(lines) if self.sshd is not None else ""

    runner_log = probes.runner_log

    locator = keep.locator_of
    kept_locator = keep.kept_locator_of
    release = keep.release
    attach_kept = keep.attach_kept
    cleanup_kept = keep.cleanup_kept

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        """Live processes of kernel ``kernel_id`` on the ssh host (:func:`.probes.kernel_processes`)."""
        return probes.kernel_processes(self, kernel_id, locator)

    def note_leftovers(self, launched: Launched, kernel_id: str, processes: list[tuple[int, int, str]]) -> None:
        """Listed by the host-process scan of :meth:`leak_snapshot` while they live."""
        self.left.add(str(launched.extra["conn"].target), kernel_id, processes)

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        """Open channels, kernel processes on the ssh host, unheld sshd containers (:mod:`.probes`)."""
        return probes.snapshot(self, host_pid)

    def leak_cleanup(self, kind: str, identity: str) -> None:
        probes.cleanup(self, kind, identity)

    signal_pid = probes.signal_pid

    def files(self, launched: Launched, workdir: str) -> SftpFiles:
        """The kernel's files on the ssh host, over a new SFTP session (:class:`~.files.SftpFiles`)."""
        return SftpFiles(workdir, self._connection().sftp())

    def describe(self) -> str:
        where = str(self.target) if self.target else "sshd container on 127.0.0.1"
        return f"ssh ({where}, keepalive {self.keepalive_interval:g} s x {self.keepalive_missed})"


def _leased(conn: SshConnection) -> SshConnection:
    """``conn``, its socket a lease of this process: a forked child closes its copy (the connection kept
    the kernels' channels open, so their runners outlived a SIGKILLed host by the child's whole life)."""
    lease(conn.transport.sock)
    return conn



#: The options of :class:`SshTransport` that take ``None`` (the default, or off).
_OPTIONAL = ("orphan_timeout", "server_idle_timeout", "mem_limit_bytes", "max_sessions")
