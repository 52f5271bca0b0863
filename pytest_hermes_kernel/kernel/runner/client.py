"""``client DIR PARAMS``: one long poll for execute-only backends (the ``filecell`` transport).

Each poll is one ``execute`` of ``python3 -I -S -B <runner file> client DIR PARAMS`` on the
backend: it attaches to the supervisor at ``DIR/sock``, sends frames, and prints what comes back.
It imports only :mod:`.frames` and the stdlib (no worker or supervisor code), so a poll pays
for a small interpreter start.

``PARAMS`` is base64 JSON: ``frames`` (base64 frames to send after the attach), ``pending``
(request ids whose unacknowledged results the supervisor replays), ``wait`` (ids to wait for;
requests sent here are added), ``deadline_s``, ``pickup_s``, ``early`` and ``hold_s``. The token
comes from ``DIR/token`` (never argv).

* Frames the host dropped into the kernel dir while a poll ran (files ``q-<seq>``, base64) are
  sent before the argv frames when their seq is below ``early``; later ones are picked up while
  waiting, for ``pickup_s`` seconds.
* Every frame received is printed as one base64 line after :data:`CLIENT_BEGIN`; the last line
  is ``CLIENT_END STATUS@@`` (see :data:`ClientStatus`).
* Leaving is lossless: it half-closes and relays until the supervisor lets it go. After a tool
  call, a ``running`` frame or at the deadline (the cell runs on) a forked holder stays attached
  for up to ``hold_s`` seconds and spools what comes (``h-<pid>.spool``, under the lock ``h-<pid>.lock``) until the
  next client takes over and relays the spool first: no frame is sent while nobody is attached,
  so a tool call from another thread is never lost.
"""

from __future__ import annotations

import _socket as socket  # (``socket`` imports ``enum`` and ``selectors``: ~2 ms of every poll)
import binascii
import posix  # (not ``os``: it imports ``_collections_abc``, ``stat`` and ``posixpath``, ~1 ms of every poll)
import sys
import time

from .frames import READ_CHUNK, FrameDecoder, FrameError, _loads, encode_frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, NoReturn

    from .frames import Header

    #: How a poll ended: ``done`` (a reply for a ``wait`` id; with no ``wait`` ids: the hello),
    #: ``tool``/``running`` (a tool call of a ``wait`` cell, or it started), ``deadline``, ``eof``
    #: (dropped: another client attached, or the supervisor ended), ``gone`` (nothing listens)
    #: or ``error`` (refused, bad frame).
    ClientStatus = Literal["done", "tool", "running", "deadline", "eof", "gone", "error"]

def _path(kernel_dir: str, name: str) -> str:
    """``name`` in ``kernel_dir`` (``os.path.join`` for a plain name, without importing ``os``)."""
    return kernel_dir + name if not kernel_dir or kernel_dir.endswith("/") else f"{kernel_dir}/{name}"


CLIENT_BEGIN = "@@hermes-client begin@@"
CLIENT_SENT = "@@hermes-client sent@@"
CLIENT_END = "@@hermes-client end"
CLIENT_REQUESTS = ("execute", "start_worker", "kill_worker", "ping", "shutdown")
CLIENT_REPLIES = ("result", "worker", "killed", "pong", "bye", "error")
CLIENT_DROP_PREFIX = "q-"
CLIENT_HOLD_PREFIX = "h-"
#: Seconds a leaving client relays after its half-close before it gives up on the supervisor.
LEAVE_S = 5.0
#: Seconds a new client waits for a holder to let go of its spool.
UNSPOOL_WAIT_S = 10.0
#: Longest single wait (seconds) while dropped frames may still arrive.
PICKUP_POLL_S = 0.05


def client(kernel_dir: str, params_b64: str) -> int:
    """Run one poll (see module docstring); its output goes to stdout. Returns exit status 0."""
    params = _loads(binascii.a2b_base64(params_b64).decode("utf-8"))
    sys.stdout.write(CLIENT_BEGIN + "\n")
    status = _session(kernel_dir, params, binascii.a2b_base64(params.get("frames") or ""))
    sys.stdout.write(f"{CLIENT_END} {status}@@\n")
    sys.stdout.flush()
    return 0


def poll(kernel_dir: str, params_arg: str) -> NoReturn:
    """The poll form's whole run (``CLIENT_BOOT`` of the filecell transport): :func:`client`, then
    the process ends at once with its status, its output flushed.

    The interpreter's own teardown (every module and object freed, one by one) is skipped: it was
    ~2 ms of CPU of a poll (15 %), after the poll's work was done and its socket closed.

    :param params_arg: PARAMS, or ``-``: PARAMS are the first line of stdin (a poll's: its frames
        must be in no argv).
    :raises Exception: what :func:`client` raises (the process then ends as Python ends).
    """
    status = client(kernel_dir, sys.stdin.readline().strip() if params_arg == "-" else params_arg)
    sys.stdout.flush()
    sys.stderr.flush()
    posix._exit(status)


def _connect(kernel_dir: str) -> tuple[socket.socket, str] | None:
    try:
        with open(_path(kernel_dir, "token"), "rb") as fh:  # (bytes: a text file's codec lookup imported a module)
            token = fh.read().strip().decode("ascii")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(_path(kernel_dir, "sock"))
    except OSError:
        return None
    return sock, token


def _session(kernel_dir: str, params: dict[str, Any], data: bytes) -> ClientStatus:
    connected = _connect(kernel_dir)
    if connected is None:
        return "gone"
    sock, token = connected
    wait = set(params.get("wait") or ())
    started = time.monotonic()
    deadline = started + float(params.get("deadline_s", 20.0))
    pickup_until = started + float(params.get("pickup_s", 15.0))
    try:  # (``_socket``'s socket is no context manager)
        return _converse(kernel_dir, sock, token, params, data, wait, deadline, pickup_until)
    finally:
        sock.close()


def _converse(kernel_dir: str, sock: socket.socket, token: str, params: dict[str, Any], data: bytes, wait: set[Any],
              deadline: float, pickup_until: float) -> ClientStatus:
    try:
        sock.sendall(encode_frame({"type": "attach", "token": token,
                                   "pending": list(params.get("pending") or ())}))
        _pickup(kernel_dir, sock, wait, params.get("early"))  # dropped before argv's frames
        _note_requests(data, wait)
        sock.sendall(data)
    except OSError:
        return "eof"
    sys.stdout.write(CLIENT_SENT + "\n")
    decoder = FrameDecoder()
    status = _unspool(kernel_dir, wait) or _await(kernel_dir, sock, decoder, wait, deadline, pickup_until)
    if status in ("tool", "running", "deadline") and float(params.get("hold_s", 0)) > 0:
        _hold(kernel_dir, sock, decoder, wait, float(params["hold_s"]))
        return status
    if status != "eof":
        _leave(sock, decoder)
    return status


def _await(kernel_dir: str, sock: socket.socket, decoder: FrameDecoder, wait: set[Any], deadline: float,
           pickup_until: float) -> ClientStatus:
    """Relay until a status: a reply, a tool call, the deadline, or the end of the connection.

    :param deadline: ``time.monotonic()`` value at which the poll returns ``deadline``.
    :param pickup_until: ``time.monotonic()`` value until which dropped frames are picked up.
    """
    while True:
        now = time.monotonic()
        chunk = _read(sock, min(deadline - now, PICKUP_POLL_S) if now < pickup_until else deadline - now)
        if chunk is None:
            if time.monotonic() >= deadline:
                return "deadline"
            if time.monotonic() < pickup_until:
                try:
                    _pickup(kernel_dir, sock, wait)
                except OSError:
                    return "eof"
        elif not chunk:
            return "eof"
        else:
            status = _relay(decoder, chunk, wait)
            if status is not None:
                return status


def _leave(sock: socket.socket, decoder: FrameDecoder) -> None:
    """Half-close, then relay until the supervisor (having read all we sent) drops us."""
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        return
    until = time.monotonic() + LEAVE_S
    while True:
        chunk = _read(sock, until - time.monotonic())
        if not chunk or _relay(decoder, chunk, set()) == "error":
            return


def _hold(kernel_dir: str, sock: socket.socket, decoder: FrameDecoder, wait: set[Any], hold_s: float) -> None:
    """Fork a holder that keeps this connection and spools frames; the caller returns at once."""
    import fcntl  # (here: most polls never hold, and a shared library costs every poll that imports it ~0.2 ms)

    base = _path(kernel_dir, f"{CLIENT_HOLD_PREFIX}{posix.getpid()}")
    lock = posix.open(base + ".lock", posix.O_WRONLY | posix.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # taken before the fork: the next client never misses it
    sys.stdout.flush()
    if posix.fork():
        posix.close(lock)  # the holder keeps the lock until its spool is complete
        return
    try:
        posix.setsid()
        null = posix.open("/dev/null", posix.O_RDWR)
        for fd in (0, 1, 2):  # the backend's execute ends when our parent exits
            posix.dup2(null, fd)
        sys.stdout = open(base + ".spool", "a", encoding="ascii")  # noqa: SIM115 - until posix._exit
        _spool(sock, decoder, wait, time.monotonic() + hold_s)
        sys.stdout.flush()
    finally:
        posix._exit(0)


def _spool(sock: socket.socket, decoder: FrameDecoder, wait: set[Any], until: float) -> None:
    while True:
        chunk = _read(sock, until - time.monotonic())
        if not chunk:  # pushed out by the next client (EOF) or held long enough
            break
        if _relay(decoder, chunk, wait) in ("done", "error"):  # the cell ended
            break
    if chunk is None or chunk:
        _leave(sock, decoder)


def _entries(kernel_dir: str) -> list[str]:
    """The kernel dir's entries; none once the supervisor, ending (a shutdown), removed it: its last
    frames (the ``bye``) are still on the connection, and the poll must go on to read them."""
    try:
        return posix.listdir(kernel_dir)
    except FileNotFoundError:
        return []


def _unspool(kernel_dir: str, wait: set[Any]) -> ClientStatus | None:
    """Relay what holders spooled (oldest first, once each); the status it implies, or None."""
    status = None
    locks = sorted(n for n in _entries(kernel_dir) if n.startswith(CLIENT_HOLD_PREFIX) and n.endswith(".lock"))
    for name in locks:
        lines = _take_spool(_path(kernel_dir, name))
        for line in lines or ():
            decoder = FrameDecoder()
            decoder.feed(binascii.a2b_base64(line))
            frame = decoder.next_frame()
            if frame is not None:
                sys.stdout.write(line + "\n")
                status = _status(frame[0], wait, status)
    sys.stdout.flush()
    return status


def _take_spool(lock_path: str) -> list[str] | None:
    """Wait for the holder to let go of ``lock_path``; return its spool's lines (``None``: taken)."""
    import fcntl  # (see :func:`_hold`)

    try:
        fd = posix.open(lock_path, posix.O_RDONLY)
    except OSError:
        return None
    try:
        until = time.monotonic() + UNSPOOL_WAIT_S
        while True:  # the holder lets go once the supervisor has pushed it out for us
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > until:
                    break
                time.sleep(0.005)
        spool = lock_path[: -len(".lock")] + ".spool"
        try:
            with open(spool, encoding="ascii") as fh:
                lines = fh.read().split()
            posix.unlink(spool)
            posix.unlink(lock_path)
        except OSError:
            return None  # taken by a concurrent client
        return lines
    finally:
        posix.close(fd)


def _pickup(kernel_dir: str, sock: socket.socket, wait: set[Any], below: int | None = None) -> None:
    """Send the frames dropped into ``kernel_dir`` (``q-<seq>``, seq < ``below``), oldest first, once."""
    names = sorted(n for n in _entries(kernel_dir) if n.startswith(CLIENT_DROP_PREFIX) and n[2:].isdigit()
                   and (below is None or int(n[2:]) < below))
    for name in names:
        path = _path(kernel_dir, name)
        mine = f"{path}.{posix.getpid()}"
        try:
            posix.rename(path, mine)  # claims it: a concurrent client gets ENOENT
            with open(mine, "rb") as fh:
                data = binascii.a2b_base64(fh.read())
            posix.unlink(mine)
        except OSError:
            continue
        _note_requests(data, wait)
        sock.sendall(data)


def _note_requests(data: bytes, wait: set[Any]) -> None:
    decoder = FrameDecoder()
    decoder.feed(data)
    while True:
        frame = decoder.next_frame()
        if frame is None:
            return
        if frame[0].get("type") in CLIENT_REQUESTS and frame[0].get("id") is not None:
            wait.add(frame[0]["id"])


def _read(sock: socket.socket, left: float) -> bytes | None:
    """Bytes from ``sock``; ``b""`` at EOF or error, ``None`` when ``left`` seconds pass first.

    (A socket timeout, not ``select``: a shared library less for every poll to load; the socket is
    blocking again afterwards, for the ``sendall`` of a big dropped frame.)
    """
    if left <= 0:
        return None
    sock.settimeout(left)
    try:
        return sock.recv(READ_CHUNK)
    except socket.timeout:  # (``TimeoutError`` from 3.10, an ``OSError`` before: caught first)
        return None
    except OSError:
        return b""
    finally:
        sock.settimeout(None)


def _status(header: Header, wait: set[Any], status: ClientStatus | None) -> ClientStatus | None:
    """The poll's status after ``header`` (``done`` beats ``tool``; ``error`` beats both)."""
    kind = header.get("type")
    key = header.get("cell") if kind == "tool_call" else header.get("id")
    if kind == "error" and key is None:
        return "error"
    if (kind == "hello" and not wait) or (kind in CLIENT_REPLIES and key in wait):
        return "error" if status == "error" else "done"
    if kind in ("tool_call", "running") and key in wait:
        return status or ("tool" if kind == "tool_call" else "running")
    return status


def _relay(decoder: FrameDecoder, chunk: bytes, wait: set[Any]) -> ClientStatus | None:
    """Print each complete frame as a base64 line; return the status they imply (or None)."""
    decoder.feed(chunk)
    status = None
    while True:
        try:
            frame = decoder.next_frame()
        except FrameError:
            return "error"
        if frame is None:
            sys.stdout.flush()
            return status
        header, blobs = frame
        sys.stdout.write(binascii.b2a_base64(encode_frame(header, blobs), newline=False).decode() + "\n")
        status = _status(header, wait, status)
