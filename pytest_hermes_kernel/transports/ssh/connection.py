"""One paramiko connection for the ssh transport: exec channels, SFTP, and a liveness check.

paramiko does not notice a peer that went silent (paramiko#189, #503, #2326, #2026): a read
blocks forever and ``Transport.is_active()`` stays true. So the connection checks itself: a
thread sends ``keepalive@openssh.com`` global requests *with a reply wanted* every
``keepalive_interval`` seconds, and when no reply came for ``keepalive_interval *
keepalive_missed`` seconds it declares the connection dead (``unresponsive``) and closes it,
which ends every channel on it (reads return EOF at once). paramiko's own ``set_keepalive``
(no reply wanted) is set too, for NATs and the server's ``ClientAliveInterval``.

:class:`SshStream` is the :class:`~pytest_hermes_kernel.kernel.channel.ByteStream` over one exec
channel (the relay); its stdin is never the kernel's stdin (the runner puts ``/dev/null`` there).
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Literal

from ...errors import ConfigError, ExecNotStartedError, TransportLostError
from ...kernel.contract import note_activity
from .address import (DROPPED_HINT, SILENT_HINT, SshTarget, changed_key_message, connect_hint, dropped_before_banner,
                      sftp_broke_hint)
from .credentials import load_known_hosts, read_host_key
from .logs import LOG_CHANNEL

if TYPE_CHECKING:
    import paramiko

HostKeyPolicy = Literal["reject", "warn", "auto-add"]
KEEPALIVE_REQUEST = "keepalive@openssh.com"
#: Channel-open refusals a session of ours ending can cure (RFC 4254 5.1): 2, connect failed
#: (OpenSSH's answer past ``MaxSessions``), and 4, resource shortage.
REFUSED_FOR_NOW = (2, 4)

def _end_handshake_timer(client: paramiko.SSHClient) -> None:
    """Cancel the timer paramiko starts for a key exchange that never finished (its thread ran 15 s
    on, and the leak check counted it)."""
    transport = client.get_transport()
    if transport is not None:
        transport.packetizer.complete_handshake()


#: Longest single wait in a read, so a dead connection is noticed without data.
READ_SLICE_S = 0.5


class SshConnection:
    """A connected, self-checking SSH client (see module docstring).

    :param target: where to connect.
    :param pkey: a paramiko private key (or use ``key_filename``).
    :param host_key: ``"<type> <base64>"`` to pin; the server must present exactly this key.
    :param host_key_policy: for unknown hosts when nothing is pinned: ``reject`` (default),
        ``warn`` or ``auto-add`` (only when asked for; never silently).
    :param known_hosts: extra known_hosts file (``~/.ssh/known_hosts`` is always read). Neither
        is ever written: a key accepted by ``auto-add`` goes into ``session_keys`` only.
    :param session_keys: the host keys this session (the transport) has seen: trusted on every
        later connection, so a key that changes within the session is refused (B47), and the
        key accepted now is added to them.
    :param connect_timeout: seconds for TCP connect, banner and authentication each.
    :param max_sessions: channels this connection keeps open at once: the server's
        ``MaxSessions`` (OpenSSH's default is 10; the kit's sshd container allows 64). Past it
        a new channel waits up to ``session_wait`` seconds for one to close instead of being
        refused by the server.
    :param session_wait: seconds a new channel may wait for a free session.
    :param dial: the address to dial instead (a fault proxy before ``target``, whose host key it checks).
    :raises TransportLostError: if the host cannot be reached or refuses us (``timed_out``
        tells a silent host from a refusal; ``permanent`` a host key mismatch).
    """

    def __init__(self, target: SshTarget, *, pkey: paramiko.PKey | None = None, key_filename: str | None = None,
                 host_key: str | None = None, host_key_policy: HostKeyPolicy = "reject",
                 known_hosts: str | None = None, keepalive_interval: float = 3.0, keepalive_missed: int = 3,
                 connect_timeout: float = 5.0, max_sessions: int = 10, session_wait: float = 30.0,
                 session_keys: paramiko.HostKeys | None = None, dial: tuple[str, int] | None = None) -> None:
        import paramiko

        if not isinstance(max_sessions, int) or max_sessions < 1:
            raise ConfigError(f"max_sessions must be an int >= 1 (the server's MaxSessions), got {max_sessions!r}")
        self.target = target
        self.max_sessions = max_sessions
        self.session_wait = session_wait
        self._channels: list[Any] = []  # open channels (exec and sftp) counted against max_sessions
        self._commands: dict[int, str] = {}  # channel id -> the command it runs (leak reports)
        self._shared: set[int] = set()  # ids of channels that outlive tests (not reported)
        self._sessions = threading.Condition()
        self._released_at = float("-inf")  # when a channel of ours was last seen closed
        self.keepalive_interval = keepalive_interval
        self.keepalive_missed = keepalive_missed
        self.connect_timeout = connect_timeout
        self.unresponsive: str | None = None  # set when keepalives went unanswered
        self._stop = threading.Event()
        self.client = paramiko.SSHClient()
        self.client.set_log_channel(LOG_CHANNEL)  # from the first byte: a failed connect logs too
        self._trust(host_key, host_key_policy, known_hosts, session_keys)
        started, dropped = time.monotonic(), 0
        while True:
            try:
                sock = None if dial is None else socket.create_connection(dial, timeout=connect_timeout)
                self.client.connect(target.host, target.port, username=target.user, pkey=pkey, key_filename=key_filename,
                                    sock=sock, timeout=connect_timeout, banner_timeout=connect_timeout,
                                    auth_timeout=connect_timeout, channel_timeout=connect_timeout,
                                    allow_agent=pkey is None and key_filename is None,
                                    look_for_keys=pkey is None and key_filename is None)
                break
            except paramiko.BadHostKeyException as exc:
                self.client.close()
                raise TransportLostError(changed_key_message(target, exc, host_key is not None, known_hosts), permanent=True) from None
            except (OSError, paramiko.SSHException, EOFError) as exc:
                _end_handshake_timer(self.client)
                self.client.close()
                if (dial is None and "protocol banner" in str(exc)
                        and dropped_before_banner(target, started + connect_timeout, dropped)):
                    dropped += 1  # closed before its banner: past MaxStartups, it takes us once others logged in
                    continue
                timed_out = time.monotonic() - started >= connect_timeout * 0.8 and not dropped
                # paramiko gives up a stalled key exchange at the timeout without saying so, then
                # fails the login on the dead session ("No existing session"): the time tells
                why = f"{type(exc).__name__}: {exc}"
                raise TransportLostError(f"cannot reach ssh host {target}: " + (
                    f"no answer within {connect_timeout:g} s ({why}){SILENT_HINT}" if timed_out else
                    f"sshd closed {dropped + 1} connections in {time.monotonic() - started:.1f} s before its banner "
                    f"({why}){DROPPED_HINT}" if dropped else f"{why}{connect_hint(exc)}"),
                                     permanent=isinstance(exc, paramiko.BadHostKeyException),
                                     timed_out=timed_out) from None
        self.transport: paramiko.Transport = self.client.get_transport()
        if session_keys is not None:
            key = self.transport.get_remote_server_key()
            session_keys.add(target.known_hosts_name(), key.get_name(), key)
        self.transport.name = f"hermes-shared ssh transport {target}"  # the leak check skips these
        self.transport.set_keepalive(max(1, int(keepalive_interval)))
        with suppress(OSError, AttributeError):  # small frames each way, one at a time: Nagle held a
            self.transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # second for sshd's 40 ms delayed ACK
        self.last_reply = time.monotonic()
        self._checker = threading.Thread(target=self._check_loop, name=f"hermes-shared ssh keepalive {target}",
                                         daemon=True)
        self._checker.start()

    def _trust(self, host_key: str | None, policy: HostKeyPolicy, known_hosts: str | None,
               session_keys: paramiko.HostKeys | None) -> None:
        import paramiko

        keys = self.client.get_host_keys()
        if host_key:
            pinned = read_host_key(host_key)
            keys.add(self.target.known_hosts_name(), pinned.get_name(), pinned)
        else:
            self.client.load_system_host_keys()
            if known_hosts:
                load_known_hosts(keys, known_hosts)
            for name, entry in (session_keys or {}).items():
                for kind, key in entry.items():
                    keys.add(name, kind, key)
        policies = {"reject": paramiko.RejectPolicy, "warn": paramiko.WarningPolicy, "auto-add": paramiko.AutoAddPolicy}
        if policy not in policies:
            raise ConfigError(f"host_key_policy must be one of {', '.join(policies)}, not {policy!r}")
        self.client.set_missing_host_key_policy(policies["reject" if host_key else policy]())

    # ------------------------------------------------------------------------------ liveness
    @property
    def usable(self) -> bool:
        return self.unresponsive is None and self.transport.is_active()

    def _check_loop(self) -> None:
        limit = self.keepalive_interval * self.keepalive_missed
        while not self._stop.is_set() and self.transport.is_active():
            answered = threading.Event()
            threading.Thread(target=self._ask, args=(answered,), name="hermes-shared ssh keepalive request",
                             daemon=True).start()
            while not answered.wait(0.1):
                if self._stop.is_set() or not self.transport.is_active():
                    return
                silent = time.monotonic() - self.last_reply
                if silent > limit:
                    self.unresponsive = (f"no reply to ssh keepalives for {silent:.1f} s (every "
                                         f"{self.keepalive_interval:g} s, {self.keepalive_missed} missed)")
                    self.transport.close()
                    return
            self.last_reply = time.monotonic()
            self._stop.wait(self.keepalive_interval)

    def _ask(self, answered: threading.Event) -> None:
        try:
            self.transport.global_request(KEEPALIVE_REQUEST, wait=True)  # a failure reply is a reply
        except Exception:  # noqa: BLE001 - the check loop sees the transport die
            return
        if self.transport.is_active():
            answered.set()

    # ------------------------------------------------------------------------------ channels
    def open_exec(self, command: str, *, shared: bool = False) -> paramiko.Channel:
        """Start ``command`` on a new session channel.

        :param shared: the channel is the transport's own and outlives tests, as the connection
            does (a kernel server's): :meth:`open_channels` does not list it.
        :raises TransportLostError: if the connection is dead or the server does not open it.
        """
        import paramiko

        if not self.usable:
            raise TransportLostError(f"ssh connection to {self.target} is down: {self.unresponsive or 'closed'}")
        note_activity()  # a channel the leak probe may report (see kernel.contract.activity)
        with self._session_slot():
            try:
                chan = _open_session(self, "ssh exec")
            except TransportLostError:  # refused by the server; the connection lives
                raise
            except (OSError, paramiko.SSHException, EOFError) as exc:
                if isinstance(exc, paramiko.SSHException) and self.transport.is_active():
                    raise TransportLostError(f"ssh exec on {self.target} failed: {exc}") from None  # e.g. a slow open
                self.transport.close()  # found dead: the next use reconnects instead of trying it again
                raise ExecNotStartedError(f"ssh exec on {self.target} failed, the connection is dead: "
                                          f"{exc or type(exc).__name__}") from None
            try:
                chan.exec_command(command)
            except (OSError, paramiko.SSHException, EOFError) as exc:
                chan.close()
                raise TransportLostError(f"ssh exec on {self.target} failed: {exc or type(exc).__name__}") from None
            self._channels.append(chan)
            self._commands[chan.get_id()] = command
            if shared:
                self._shared.add(chan.get_id())
        return chan

    def open_channels(self) -> dict[int, str]:
        """``{channel id: command}`` of this connection's open exec channels (sftp: ``"sftp"``), but
        the shared ones (see :meth:`open_exec`)."""
        with self._sessions:
            self._prune()
            return {c.get_id(): self._commands.get(c.get_id(), "sftp") for c in self._channels
                    if c.get_id() not in self._shared}

    def close_channel(self, chan_id: int) -> None:
        """Close one open channel by id (the leak checker's cleanup); unknown ids are ignored."""
        with self._sessions:
            chans = [c for c in self._channels if c.get_id() == chan_id]
        for chan in chans:
            chan.close()

    def _prune(self) -> None:
        """Forget closed channels (call with ``_sessions`` held)."""
        live = [c for c in self._channels if not c.closed]
        if len(live) < len(self._channels):
            self._released_at = time.monotonic()
            ids = {c.get_id() for c in live}  # their commands too: a connection kept every exec's for ever
            self._commands = {k: v for k, v in self._commands.items() if k in ids}
            self._shared &= ids
        self._channels = live

    @contextmanager
    def _session_slot(self) -> Iterator[None]:
        """Hold the session count while a channel opens; wait for a free session first.

        :raises TransportLostError: naming the limit, if none came free within ``session_wait``.
        """
        deadline = time.monotonic() + self.session_wait
        with self._sessions:
            while True:
                self._prune()
                if len(self._channels) < self.max_sessions:
                    break
                left = deadline - time.monotonic()
                if left <= 0 or not self.usable:
                    raise TransportLostError(
                        f"all {self.max_sessions} ssh sessions of the connection to {self.target} stayed busy for "
                        f"{self.session_wait:g} s (each kernel holds one for its channel). Hint: raise the server's "
                        "MaxSessions and pass max_sessions= to match, or run fewer kernels on this host at once")
                self._sessions.wait(min(left, 0.05))  # channels close on paramiko's thread: re-check
            yield

    def run(self, command: str, *, stdin: bytes | None = None,
            timeout: float = 30.0) -> tuple[int | None, bytes, bytes]:
        """Run ``command`` and wait; ``(exit status, stdout, stderr)``.

        :raises TransportLostError: if the connection fails.
        :raises TimeoutError: if it did not finish within ``timeout`` seconds.
        """
        chan = self.open_exec(command)
        try:
            try:
                if stdin is not None:
                    chan.sendall(stdin)
                chan.shutdown_write()
            except OSError:  # it ended before reading its stdin (no such interpreter, say): what
                pass  # it said and its exit status tell why, not the closed socket
            out, err = bytearray(), bytearray()
            deadline = time.monotonic() + timeout
            while True:
                _drain(chan, out, err)
                # Done only at EOF: sshd may send exit-status before the output it has not read
                # from the command's pipe yet (a command that exits while a forked child still
                # holds its stdout, as ``serve --listen`` does: measured 19 of 128 launches lost
                # their ``ready`` line in 32-way storms when the exit status alone ended the read).
                # EOF and exit-status come in either order; a closed channel sends neither again.
                done = (chan.eof_received and chan.exit_status_ready()) or chan.closed
                if done and not chan.recv_ready() and not chan.recv_stderr_ready():
                    return (chan.recv_exit_status() if chan.exit_status_ready() else None), bytes(out), bytes(err)
                if not self.usable:
                    raise TransportLostError(f"ssh connection to {self.target} lost: {self.unresponsive or 'closed'}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"ssh command on {self.target} did not finish within {timeout} s")
                select.select([chan], [], [], min(left, 0.1))
        finally:
            chan.close()

    def sftp(self) -> paramiko.SFTPClient:
        """A new SFTP session (close it after use).

        :raises TransportLostError: if it cannot be opened.
        """
        import paramiko

        note_activity()
        with self._session_slot():
            chan, asked = None, False
            try:  # what paramiko's SSHClient.open_sftp does, with our retry
                chan = _open_session(self, "sftp")
                chan.invoke_subsystem("sftp")
                asked = True
                sftp = paramiko.SFTPClient(chan)
            except (OSError, paramiko.SSHException, EOFError, paramiko.SFTPError) as exc:
                ended = _how_it_ended(chan, not isinstance(exc, paramiko.SFTPError)) if asked and chan is not None else ""
                if chan is not None:
                    chan.close()
                if isinstance(exc, TransportLostError):  # refused: it says so
                    raise
                # the host let us in (a connection that broke says nothing more): sshd, or the login shell it
                # runs SFTP through, stopped it (a chatty, restricted or exiting shell, a ForceCommand)
                why = sftp_broke_hint(self.run, refused=not asked, ended=ended) if chan is not None and self.usable else ""
                raise TransportLostError(f"sftp to {self.target} failed: {exc or type(exc).__name__}{why}") from None
            self._channels.append(sftp.get_channel())
        return sftp

    def close(self) -> None:
        self._stop.set()
        self.client.close()


def _open_session(conn: SshConnection, what: str) -> paramiko.Channel:
    """A new session channel; a refusal that a session of ours ending can cure is retried.

    paramiko counts a channel closed when it sends its close; sshd frees its session once it
    has read that close and the command has exited. So an open just after a close can be
    refused (OpenSSH answers code 2 past ``MaxSessions``: twelve commands at once on a
    ``MaxSessions 10`` server failed so now and then). While this connection holds or has just
    released a session, a refusal is retried (10 ms doubling to 200 ms) for up to
    ``session_wait`` s; on an idle connection it fails at once.

    :raises TransportLostError: if the server still refuses (saying how long we waited and the
        likely cause); other paramiko errors propagate unchanged.
    """
    import paramiko

    first, delay, tries = time.monotonic(), 0.01, 0
    while True:
        try:
            return conn.transport.open_session(timeout=conn.connect_timeout)
        except paramiko.ChannelException as exc:  # refused by the server; the connection lives
            now = time.monotonic()
            ours = bool(conn._channels) or now - conn._released_at < conn.session_wait
            if exc.code in REFUSED_FOR_NOW and ours and now - first < conn.session_wait:
                time.sleep(min(delay, first + conn.session_wait - now))
                delay, tries = min(delay * 2, 0.2), tries + 1
                continue
            why = (f" (retried for {now - first:.1f} s while this connection held {len(conn._channels)} sessions: "
                   f"the server's MaxSessions may be below max_sessions={conn.max_sessions})\nHint: pass max_sessions= "
                   "the server's MaxSessions, or start kernels by its kernel server (one session for all)") if tries else ""
            raise TransportLostError(f"{what} on {conn.target} refused: {exc}{why}") from None


def put_file(sftp: paramiko.SFTPClient, path: str, data: bytes) -> None:
    """Write ``data`` to a new private (0600) file ``path`` over SFTP."""
    with sftp.open(path, "wb") as fh:
        fh.chmod(0o600)
        fh.write(data)


def _how_it_ended(chan: Any, ended: bool) -> str:
    """`` (exit status N; stderr ...)`` of a subsystem channel; ``ended``: it did, its status may be on the way."""
    deadline = time.monotonic() + (1.0 if ended else 0.0)
    while not chan.exit_status_ready() and time.monotonic() < deadline:
        time.sleep(0.02)
    err = chan.recv_stderr(4096) if chan.recv_stderr_ready() else b""
    said = [f"exit status {chan.recv_exit_status()}"] if chan.exit_status_ready() else []
    return f" ({'; '.join(said + ([f'stderr {err[-300:]!r}'] if err else []))})" if said or err else ""


def _drain(chan: Any, out: bytearray, err: bytearray) -> None:
    while chan.recv_ready():
        out += chan.recv(1 << 20)
    while chan.recv_stderr_ready():
        err += chan.recv_stderr(1 << 20)


class SshStream:
    """:class:`ByteStream` over an exec channel (the relay) of an :class:`SshConnection`."""

    sends_pieces = True  # a long frame may come in pieces, each sent whole and in order (``Channel.send``)

    def __init__(self, chan: paramiko.Channel, connection: SshConnection) -> None:
        self.chan = chan
        self.connection = connection
        self.stderr = bytearray()

    def send(self, data: bytes) -> None:
        """:raises OSError: if the channel or connection is closed."""
        if self.chan.closed:
            raise OSError("ssh channel is closed")
        try:  # in 64 KiB slices: paramiko's sendall copies all that is left after each packet (32 KiB)
            for at in range(0, len(data), 1 << 16):
                self.chan.sendall(data[at:at + (1 << 16)])
        except (EOFError, OSError) as exc:  # paramiko raises EOFError when its transport died
            raise OSError(f"ssh connection broke while sending: {exc or type(exc).__name__}") from None
        except Exception as exc:  # noqa: BLE001 - paramiko.SSHException and kin: the link is gone
            raise OSError(f"ssh connection broke while sending: {exc}") from None

    def recv(self, timeout: float | None) -> bytes:
        """Next bytes from the relay; ``b""`` at EOF or when the connection died (:raises TimeoutError: nothing in ``timeout`` s)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        chan = self.chan
        while True:
            if chan.recv_ready():
                return chan.recv(1 << 20)
            if chan.recv_stderr_ready():  # keep the window open; the relay says little there
                self.stderr = (self.stderr + chan.recv_stderr(1 << 16))[-4096:]
                continue
            if chan.closed or chan.eof_received or not self.connection.usable:
                return b""
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError
            try:
                select.select([chan], [], [], READ_SLICE_S if left is None else min(left, READ_SLICE_S))
            except (OSError, ValueError):
                return b""

    def close(self) -> None:
        try:
            self.chan.close()
        except Exception:  # noqa: BLE001 - closing a channel of a dead connection
            pass
