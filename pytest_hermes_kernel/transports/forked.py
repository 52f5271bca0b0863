"""A launch's runner as the kernel server that forked it knows it, and the fallback to a spawn.

The docker and ssh transports keep the server in ``Launched.extra`` (``server``); these helpers
answer from it without an exec, and say when they cannot (the caller asks another way). What they saw is recorded on the launch: ``gone`` (the runner was seen ended:
a transport's ``alive`` and ``cleanup`` then need no exec) and ``dir_removed``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import KernelServerUnavailable
from ..kernel.contract import Launched
from .detached import REAP_WAIT_S
from .remote_server import RemoteServer


def server_of(extra: dict[str, Any]) -> RemoteServer | None:
    """The server that forked a launch (from its ``Launched.extra``), if it is still usable."""
    server = extra.get("server")
    return server if isinstance(server, RemoteServer) and server.usable else None


def with_fallback(fork: Callable[[], Launched] | None, spawn: Callable[[], Launched]) -> Launched:
    """``fork()`` the kernel from a kernel server; if there is none (``None``) or it is unavailable,
    ``spawn()`` the runner, and say so in the launch's note when a server failed."""
    note = ""
    if fork is not None:
        try:
            return fork()
        except KernelServerUnavailable as exc:
            note = f"kernel server unavailable ({exc}): started by a plain spawn"
    launched = spawn()
    launched.note = note
    return launched


def forked_frozen(launched: Launched) -> bool:
    """Whether the kernel server that carries a forked runner's stream is seen stopped now (it
    relays nothing: a shutdown waited 10 s for the runner's reply); never raises."""
    server = server_of(launched.extra)
    check = None if server is None else server.seen_frozen
    return check is not None and check()


def forked_alive(launched: Launched) -> bool | None:
    """Whether a server-forked runner still runs, as its server knows (``None``: it cannot tell; ``False``: ``gone``)."""
    server = server_of(launched.extra)
    try:
        alive = None if server is None or launched.pid is None else server.alive(launched.pid)
    except KernelServerUnavailable:
        return None
    launched.extra["gone"] = launched.extra.get("gone") or alive is False
    return alive


def forked_reap(launched: Launched, timeout: float) -> bool:
    """Wait up to ``timeout`` s for a server-forked runner to end (``gone``); ``False``: not seen (ask another way)."""
    server = server_of(launched.extra)
    gone = server is not None and launched.pid is not None and server.wait_exit(launched.pid, timeout) is not None
    launched.extra["gone"] = launched.extra.get("gone") or gone
    return gone


def forked_exit_status(launched: Launched, timeout: float) -> int | None:
    """``Transport.exit_status`` of a server-forked runner: how it ended, as its server reported it
    within ``timeout`` s (``-N``: signal ``N``); ``None``: it runs, or its server cannot tell (gone too)."""
    server = server_of(launched.extra)
    ended = None if server is None or launched.pid is None else server.wait_exit(launched.pid, timeout)
    code, sig = ended or (None, None)
    return -sig if sig else code


def reap_in_one_exec(launched: Launched, timeout: float, dirs: list[str], run: Callable[..., bytes]) -> bool:
    """The spawn path's reap of a runner asked to exit: ``run(*args) -> stdout`` runs
    :data:`~.detached.REAP_SCRIPT` where it lives (it waits for the runner's end, then removes
    ``dirs``); the verdict is recorded on the launch (``gone``; ``dir_removed`` spares
    ``cleanup`` its ``rm``; a dir a cell left unremovable, ``gone left``, is not spared: the
    leak check must go on looking for it). True when the runner is gone."""
    words = run(str(launched.pid), f"{min(timeout, REAP_WAIT_S):g}", *dirs).split()
    gone = words[:1] == [b"gone"]
    launched.extra.update(gone=gone, dir_removed=gone and bool(dirs) and b"left" not in words)
    return gone


def forked_cleanup(launched: Launched) -> bool:
    """Have the server remove a forked kernel's dir, and forget how the kernel ended (nobody asks
    after its cleanup); ``False``: remove the dir another way."""
    server = server_of(launched.extra)
    if server is not None and launched.pid is not None:
        server.forget_exit(launched.pid)
    return server is not None and bool(launched.kernel_dir) and server.remove_dir(launched.kernel_dir or "")
