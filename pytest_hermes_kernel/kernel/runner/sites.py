"""What a kernel server's site dirs were when it started, and whether they changed since.

An interpreter builds ``sys.path`` from its site dirs when it starts (``.pth`` files, the user's
site dir if it exists, ``sitecustomize``); a kernel forked from a server has the server's. So a
server compares the site dirs with what they were at its start (:data:`SITE_AT_START`) before
each fork: once they changed, it refuses spawns as ``stale`` (the host starts a new server) and a
kernel forked as they changed starts afresh (``server.exec_fresh``).
"""

from __future__ import annotations

import os


def site_state() -> tuple[tuple[str, int | None, tuple[tuple[str, int], ...]], ...]:
    """The site dirs an interpreter start reads (the user's one too, on ``sys.path`` only if it
    exists): each with its mtime (``None``: missing) and :func:`_startup_entries`."""
    import site

    dirs = list(site.getsitepackages()) + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    return tuple((path, _mtime(path), _startup_entries(path)) for path in dirs)


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _startup_entries(path: str) -> tuple[tuple[str, int], ...]:
    """What of site dir ``path`` an interpreter start reads: its ``.pth`` files and
    ``sitecustomize``/``usercustomize``, with their mtimes (a module installed there is found as well
    by a forked kernel: its import looks at the dir again)."""
    try:
        with os.scandir(path) as it:
            return tuple(sorted((e.name, e.stat().st_mtime_ns) for e in it if e.name.endswith(".pth")
                                or e.name.startswith(("sitecustomize", "usercustomize"))))
    except OSError:
        return ()


def site_changed() -> bool:
    """Whether a site dir changed since this server started (:data:`SITE_AT_START`) so that an
    interpreter started now gets another ``sys.path`` or runs other start-up code."""
    for path, mtime, entries in SITE_AT_START:
        now = _mtime(path)
        if now != mtime:  # an entry added or removed: read them all again
            if now is None or mtime is None or _startup_entries(path) != entries:
                return True
        elif any(_mtime(os.path.join(path, name)) != stamp for name, stamp in entries):
            return True  # one rewritten in place (``easy-install.pth``): the dir's own mtime stays
    return False


#: :func:`site_state` when this server started: a spawn after it changed is refused (:meth:`ForkingServer.stale`),
#: and a kernel forked as it changed is started afresh (:func:`exec_fresh`).
SITE_AT_START = site_state()
