"""The worker's process set-up (:func:`become_worker`) and the kernel's environment, applied to the
worker only, after everything about its start is fixed.

The runner itself starts with a fixed launch environment that the transport chooses (the far
side's own ``PATH``/``HOME`` etc., and ``HERMES_KERNEL_ID``); no name a user passes can change
which interpreter runs, where it looks for modules or what a shell does on the way. The kernel's
environment travels in the runner config (JSON: any name the OS can hold) and a freshly forked
worker applies it to ``os.environ`` before its first cell, so cells and every process they start
see exactly those values.

Config keys (all optional):

* ``env``: name -> value to set.
* ``env_clear``: start from an empty environment (local: ``env`` is the whole environment).
* ``env_unset``: names to remove first (host variables the kernel must not see).

What an interpreter reads at its own start cannot apply to a worker that is forked, not started:
``PYTHONPATH`` is honoured by putting its entries on ``sys.path`` as an interpreter start would;
``PYTHONHASHSEED``, ``PYTHONHOME``, ``PYTHONWARNINGS``, ``LD_PRELOAD`` and the like apply to the
processes cells start, not to the kernel's own interpreter.
"""

from __future__ import annotations

import faulthandler
import fcntl
import io
import os
import signal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Set in every kernel process whatever ``env`` says: the leak probes and the failed-launch kill
#: find a kernel's processes by it (``/proc/<pid>/environ``), so it is not a user value.
KERNEL_ID_NAME = "HERMES_KERNEL_ID"
#: ``HERMES_KERNEL_ID`` of a kernel server (:mod:`.server`): a 64-character slot each kernel it
#: forks writes its own id over; probes tell a server from a kernel by this prefix.
SERVER_KERNEL_ID_PREFIX = "hermes-kernel-server"
SERVER_KERNEL_ID = SERVER_KERNEL_ID_PREFIX.ljust(64, ".")


def apply_kernel_env(config: dict[str, Any]) -> None:
    """Make ``os.environ`` the kernel's environment (see module docstring).

    :param config: the runner config (``env``, ``env_clear``, ``env_unset``, ``kernel_id``).
    """
    if config.get("env_clear"):
        os.environ.clear()
    for name in config.get("env_unset") or ():
        os.environ.pop(name, None)
    os.environ.update(config.get("env") or {})
    if config.get("kernel_id"):
        os.environ[KERNEL_ID_NAME] = str(config["kernel_id"])
    _extend_sys_path(os.environ.get("PYTHONPATH", ""))
    if not sys.executable:  # started by name with no PATH (a backend whose commands get no environment)
        sys.executable = os.path.realpath("/proc/self/exe")  # cells start sys.executable


def _extend_sys_path(pythonpath: str) -> None:
    """Put ``PYTHONPATH``'s entries after ``sys.path[0]`` (where an interpreter start puts them)."""
    entries = [p for p in pythonpath.split(os.pathsep) if p and p not in sys.path]
    sys.path[1:1] = entries


#: Private copies of the output pipes' write ends (close-on-exec), from which :func:`restore_stdio`
#: puts fd 1 and 2 back; set by :func:`become_worker`.
_STDIO_COPIES: dict[int, int] = {}
#: Lowest fd the copies take (out of the way of the small numbers a cell's own files get).
_COPY_FD_MIN = 64


def become_worker(out_w: int, err_w: int, config: dict[str, Any]) -> None:
    """Own process group, stdin on ``/dev/null``, fd 1/2 on the pipes, default signals, cwd,
    ``faulthandler`` on fd 2, the kernel's environment (:mod:`.environ`)."""
    os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    _STDIO_COPIES.update({fd: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _COPY_FD_MIN) for fd in (1, 2)})
    for fd in (null, out_w, err_w):
        if fd > 2:
            os.close(fd)
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the cell's stdin for good
    sys.stdout = _text_stream(1)
    sys.stderr = _text_stream(2)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    faulthandler.enable(file=2, all_threads=True)  # a crash's traceback lands in the cell's stderr
    sys.argv = [""]
    if config.get("cwd"):
        os.chdir(config["cwd"])
    if "" not in sys.path:
        sys.path.insert(0, "")
    apply_kernel_env(config)


def restore_stdio() -> None:
    """Before each cell: fd 1 and 2 on the output pipes again, and a ``sys.stdout``/``sys.stderr``
    that a cell closed replaced. A cell that closed fd 1 (or ``dup2``-ed another file over it)
    left every later cell without captured output: ``print`` raised ``EBADF``, and the output of
    the processes it started was lost, for the kernel's life (found by a breaker helper)."""
    for fd, copy in _STDIO_COPIES.items():
        try:
            same = os.path.samestat(os.fstat(fd), os.fstat(copy))
        except OSError:
            same = False
        if not same:
            os.dup2(copy, fd)
    for name, fd in (("stdout", 1), ("stderr", 2)):
        for attr in (name, f"__{name}__"):
            stream = getattr(sys, attr)
            if stream is None or getattr(stream, "closed", False):
                setattr(sys, attr, _text_stream(fd))


def _text_stream(fd: int) -> io.TextIOWrapper:
    """A real ``sys.stdout``-like stream on ``fd``: ``.buffer``, ``.fileno()``, written through."""
    raw = io.FileIO(fd, "wb", closefd=False)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace",
                            line_buffering=True, write_through=True)
