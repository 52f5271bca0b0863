"""Process-tree helpers on top of psutil (Linux ``/proc`` for the session id psutil lacks)."""

from __future__ import annotations

import os
import signal

import psutil


def pid_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def session_id(pid: int) -> int | None:
    """The session id of ``pid`` (field 6 of ``/proc/PID/stat``), or ``None`` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[3])


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) pids whose session id is ``sid``."""
    members = []
    for pid in psutil.pids():
        if session_id(pid) == sid and pid_alive(pid):
            members.append(pid)
    return members


def kill_session(sid: int, sig: int = signal.SIGKILL) -> list[int]:
    """Send ``sig`` to every process in session ``sid``; return the pids signalled.

    A kernel's runner leads its own session, so this reaches the runner, its worker and every
    process a cell started, including ones that moved to another process group (but not ones
    that called ``setsid`` themselves: that is how a cell opts a daemon out).
    """
    hit = []
    for pid in session_members(sid):
        try:
            os.kill(pid, sig)
            hit.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    return hit


def descendants(pid: int) -> list[psutil.Process]:
    """Every live descendant of ``pid`` (empty if it is gone)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def processes_with_env(name: str, value: str) -> list[str]:
    """``"pid: cmdline"`` of live processes whose environment has ``name=value``."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get(name) == value and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(f"{proc.pid}: {' '.join(proc.cmdline())[:160]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            continue
    return found


def dirs_under(root: str, prefix: str) -> list[tuple[str, str]]:
    """``(name, path)`` of the entries of ``root`` named ``prefix*`` that are not symlinks
    (sweeps never follow a planted link); empty when ``root`` cannot be listed."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return [(n, os.path.join(root, n)) for n in names
            if n.startswith(prefix) and not os.path.islink(os.path.join(root, n))]
