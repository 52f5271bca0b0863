"""The worker's process set-up (:func:`become_worker`), a cell's source run (:func:`exec_source`),
its stdio around each cell (:func:`restore_stdio`, :func:`flush_stdio`) and its end
(:func:`finalize_and_exit`), and the kernel's environment, applied to the worker only, after
everything about its start is fixed.

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

import ast
import atexit
import faulthandler
import gc
import io
import os
import signal
import sys
import threading

try:  # the C function: ``signal.getsignal`` makes an ``Enum`` of each handler, raising a ``ValueError``
    from _signal import getsignal as _getsignal  # inside for a callable one (half the worker's CPU for a cell "1")
except ImportError:  # (an interpreter without ``_signal``)
    _getsignal = signal.getsignal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
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
    # as UTF-8 bytes: a worker whose file system encoding is ASCII (LC_ALL=C, PYTHONUTF8=0) died on 'A': '\u00fc'
    env = {_utf8(name): _utf8(value) for name, value in (config.get("env") or {}).items()}
    if config.get("env_clear"):  # (a name the kernel keeps is not unset and set again: 0.3 ms of a start)
        for name in [name for name in os.environb if name not in env]:
            del os.environb[name]
    for name in config.get("env_unset") or ():
        os.environb.pop(_utf8(name), None)
    for name, value in env.items():
        if os.environb.get(name) != value:  # (one a forked worker has already: no putenv)
            os.environb[name] = value
    if config.get("kernel_id"):
        os.environ[KERNEL_ID_NAME] = str(config["kernel_id"])
    _extend_sys_path(os.environ.get("PYTHONPATH", ""))
    if not sys.executable:  # started by name with no PATH (a backend whose commands get no environment)
        sys.executable = os.path.realpath("/proc/self/exe")  # cells start sys.executable


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _extend_sys_path(pythonpath: str) -> None:
    """Put ``PYTHONPATH``'s entries after ``sys.path[0]`` (where an interpreter start puts them)."""
    entries = [p for p in pythonpath.split(os.pathsep) if p and p not in sys.path]
    sys.path[1:1] = entries


#: fd 1 and 2 as :func:`become_worker` set them: fd -> (the pipe's ``(st_dev, st_ino)``, where
#: :func:`restore_stdio` opens it again: ``/proc/<supervisor>/fd/<its write end>``). The worker
#: holds no copy of its own: a cell's ``os.closerange`` could close it, or a file of the cell's
#: take its number, and a low ``ulimit -n`` leaves no room for one.
_STDIO: dict[int, tuple[tuple[int, int], str]] = {}


def _noting(set_handler: Callable[..., Any]) -> Callable[..., Any]:
    """``signal.signal`` that notes the signal in :data:`_handled` once its handler is set."""
    def signal_(signalnum: Any, handler: Any) -> Any:
        previous = set_handler(signalnum, handler)
        _handled.add(int(signalnum))
        return previous
    signal_.__doc__, signal_.__name__, signal_.__qualname__ = set_handler.__doc__, "signal", "signal"
    signal_.__wrapped__ = set_handler  # type: ignore[attr-defined]
    return signal_


def become_worker(out_w: int, err_w: int) -> None:
    """Own process group, stdin on ``/dev/null``, fd 1/2 on the pipes, default signals,
    ``faulthandler`` on fd 2: what a worker is before it is a kernel's (:func:`enter_kernel_env`)."""
    os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    _STDIO.update({fd: (_pipe_of(fd), f"/proc/{os.getppid()}/fd/{source}") for fd, source in ((1, out_w), (2, err_w))})
    for fd in (null, out_w, err_w):
        if fd > 2:
            os.close(fd)
    signal.signal = _noting(signal.signal)  # the guard of cells' handlers looks at these only
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the cell's stdin for good
    sys.stdout = _text_stream(1)
    sys.stderr = _text_stream(2)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    faulthandler.enable(file=2, all_threads=True)  # a crash's traceback lands in the cell's stderr
    sys.argv = [""]
    if "" not in sys.path:
        sys.path.insert(0, "")


def join_cgroup(config: dict[str, Any], say_fd: int) -> None:
    """Join the cgroup of ``config['cgroup_procs']`` (a ``cgroup.procs`` file), if any.

    The start checked it (:func:`.serve.cgroup_problem`); a worker that cannot join (the cgroup
    removed since: a restart's, or the next cell's after a death) says so in one line on
    ``say_fd`` (its stderr pipe) and exits as a failed start does (70), so the next cell is
    ``died`` with that line in its note: it ran outside the cgroup, without its memory limit, and
    said nothing (a hog under a 128 MiB limit took 400 MB and came back ``ok``). It ends by
    ``os._exit``, never by an exception a cell could see.

    :param say_fd: where the line goes (the worker's stderr pipe).
    """
    cgroup_procs = config.get("cgroup_procs")
    if cgroup_procs:
        try:
            with open(cgroup_procs, "w", encoding="ascii") as fh:
                fh.write(str(os.getpid()))
        except OSError as exc:
            os.write(say_fd, f"hermes-kernel runner: the worker cannot join the cgroup cgroup_procs={cgroup_procs!r}: "
                             f"{exc.strerror or exc} (its limit would not apply)\n".encode("utf-8", "backslashreplace"))
            os._exit(70)  # EX_SOFTWARE, as any failed worker start (worker.START_FAILED)


def enter_kernel_env(config: dict[str, Any]) -> None:
    """The kernel's cwd and environment (:func:`apply_kernel_env`), in a worker set up by
    :func:`become_worker`; a cwd that is gone ends the worker with one line on stderr."""
    if config.get("cwd"):
        try:
            os.chdir(config["cwd"])
        except OSError as exc:  # removed since the kernel started (a restart's worker): one line, not a traceback
            os.write(2, f"hermes-kernel runner: cannot enter the working directory cwd={config['cwd']!r}: "
                        f"{exc.strerror}\n".encode("utf-8", "backslashreplace"))
            os._exit(70)  # EX_SOFTWARE, as any failed worker start (worker.START_FAILED)
    apply_kernel_env(config)


def restore_stdio() -> None:
    """Before each cell: fd 1 and 2 on the output pipes again, and a ``sys.stdout``/``sys.stderr``
    that a cell closed replaced. A cell that closed fd 1 (or ``dup2``-ed another file over it)
    left every later cell without captured output: ``print`` raised ``EBADF``, and the output of
    the processes it started was lost, for the kernel's life (found by a breaker helper). The pipe
    is opened again through the supervisor's own write end (``/proc/<pid>/fd/<n>``); where that
    fails the fd stays as the cell left it. Never raises."""
    for fd, (pipe, path) in _STDIO.items():
        if _pipe_of(fd) == pipe:
            continue
        try:
            again = os.open(path, os.O_WRONLY)  # the lowest free fd: ``fd`` itself when the cell closed it
        except OSError:
            continue
        if again == fd:
            os.set_inheritable(fd, True)  # (os.open makes it close-on-exec: the cell's subprocesses write to it)
            continue
        try:
            if _pipe_of(again) == pipe:
                os.dup2(again, fd)
        except OSError:
            pass
        finally:
            os.close(again)
    for name, fd in (("stdout", 1), ("stderr", 2)):
        for attr in (name, f"__{name}__"):
            stream = getattr(sys, attr, None)
            if stream is None or _closed(stream):
                try:
                    setattr(sys, attr, _text_stream(fd))
                except OSError:  # fd itself is closed and could not be opened again
                    pass


def _closed(stream: Any) -> bool:
    """Whether a cell's stream says it is closed; a ``closed`` that raises (the cell's code: raised
    here, before the next cell, it ended the worker) leaves the stream as the cell made it."""
    try:
        return bool(getattr(stream, "closed", False))
    except BaseException:  # noqa: BLE001
        return False


def _pipe_of(fd: int) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of what ``fd`` refers to; ``None`` when it is closed."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _text_stream(fd: int) -> io.TextIOWrapper:
    """A real ``sys.stdout``-like stream on ``fd``: ``.buffer``, ``.fileno()``, written through."""
    raw = io.FileIO(fd, "wb", closefd=False)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace",
                            line_buffering=True, write_through=True)


def _c_fflush() -> Callable[[Any], int] | None:
    """libc's ``fflush`` (``None``: no ``ctypes`` or no libc to load). Loaded at import: a kernel
    server has it loaded once for every kernel it forks."""
    try:
        import ctypes

        fflush = ctypes.CDLL(None).fflush
        fflush.argtypes = [ctypes.c_void_p]
        return fflush  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001
        return None


_FFLUSH = _c_fflush()


def flush_stdio() -> None:
    """Flush the cell's stdout/stderr (the ones it may have replaced and the originals), and C's stdio:
    on a pipe C's ``stdout`` is fully buffered, and a C extension's ``printf`` output reached no cell."""
    if _FFLUSH is not None:
        try:
            _FFLUSH(None)
        except Exception:  # noqa: BLE001
            pass
    for name in ("stdout", "stderr", "__stdout__", "__stderr__"):
        stream = getattr(sys, name, None)  # (a cell may have deleted it)
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # noqa: BLE001 - the cell may have closed or replaced them (with its own
            pass  # stream, whose flush is its code: a SystemExit raised there ended the worker)


#: Frames the worker keeps free above its own depth between cells (its frame I/O and JSON nest).
RECURSION_ROOM = 100


def end_of_cell() -> None:
    """After a cell: keep the worker room to run (a cell's ``sys.setrecursionlimit(30)`` ended it
    between cells, exit code 70, with nothing said), saying so on the cell's stderr, then
    :func:`flush_stdio`. A limit with room enough stays as the cell set it."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    if limit < depth + RECURSION_ROOM:
        sys.setrecursionlimit(depth + RECURSION_ROOM)
        try:
            sys.__stderr__.write(f"hermes-kernel: the recursion limit {limit} leaves the kernel too little room to "
                                 f"run; it is {depth + RECURSION_ROOM} now\n")
        except BaseException:  # noqa: BLE001 - the cell may have closed it
            pass
    if _guard_late[0]:  # (done as the cell's code ended, unless its recursion limit left no room then)
        _guard_cell_handlers()
        _guard_late[0] = False
    flush_stdio()


def finalize_and_exit(code: int, namespace: dict[str, Any], *, join_threads: bool = True) -> None:
    """End the worker as a clean interpreter exit would: threads joined (``join_threads``; else only
    ``threading``'s own exit calls run, which end executors' pools: without them a process pool's
    workers waited for work and the atexit join of them for the grace), atexit run, the cells'
    ``namespace`` freed (an open file's buffered writes reach it, as at an interpreter's end: after
    ``os._exit`` alone they were lost), stdio flushed. Never returns."""
    # (threads joined: the supervisor kills us after its grace)
    steps = (threading._shutdown if join_threads else _threading_exit_calls,)  # type: ignore[attr-defined]
    for step in (*steps, atexit._run_exitfuncs, namespace.clear, gc.collect):
        try:
            step()
        except BaseException:  # noqa: BLE001 - the cells' code (a __del__, a handler): the end goes on
            pass
    flush_stdio()
    os._exit(code)


def _threading_exit_calls() -> None:
    """What ``threading._register_atexit`` registered (``concurrent.futures``' shutdown of its
    executors), as ``threading._shutdown`` runs it before it joins the threads."""
    for call in reversed(getattr(threading, "_threading_atexits", [])):
        call()


def end_forked_child(reply: dict[str, Any], exiting: int | None) -> None:
    """End a process a cell forked, come back to the worker at the end of the cell's code, with the
    status an interpreter gives: its ``SystemExit`` code (``exiting``), else 0, or 1 after the
    traceback of an uncaught error on its stderr (it exited 0, the error printed nowhere). Never returns."""
    code = exiting if exiting is not None else 0 if reply.get("status") == "ok" else 1
    if exiting is None and code:
        try:
            os.write(2, str(reply.get("traceback", "")).encode("utf-8", "backslashreplace"))
        except OSError:
            pass
    os._exit(code)


#: A trace function a cell set (``sys.settrace``), set aside while the runner's own code runs.
_cell_trace: list[Any] = [None]
#: Errors the cells' own Python signal handlers raised between cells, for the next cell's code.
_raised: list[BaseException] = []
_RUNNER = __name__.rpartition(".")[0]
#: The signals whose handler was set through ``signal.signal`` in this worker (:func:`_noting`): the
#: only ones the guard looks at. Looking at every signal a cell can catch, twice a cell, doubled a
#: local cell's round trip (``signal.valid_signals()`` alone took 66 us a call); once, it still cost
#: 36 us a cell, a tenth of it. A handler set through ``_signal.signal`` directly is not guarded.
_handled: set[int] = set()
#: The signals whose cell handler is guarded now (only these are looked at before the next cell).
_guarded: list[int] = []
#: Whether the guard is still to be done as the cell ends (its recursion limit left no room at first).
_guard_late: list[bool] = [False]


class _Guarded:
    """A cell's signal handler while the runner's own code runs between cells: it runs as ever, but
    an error it raises waits for the next cell's code (raised in the runner's, it ended the worker:
    a cell's own ``signal.alarm`` timeout that went off after its work was done killed the kernel,
    "died between cells"). A late SIGINT's error is dropped, as the worker's own handler does."""

    def __init__(self, handler: Callable[[int, Any], Any]) -> None:
        self.handler = handler

    def __call__(self, signum: int, frame: Any) -> None:
        try:
            self.handler(signum, frame)
        except BaseException as exc:  # noqa: BLE001 - the cell's, for its next cell
            if signum != signal.SIGINT and not _raised:
                _raised.append(exc)


def raised_by_cell(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in a cell's code (a signal handler of the cell's that ran inside the
    runner's own), not by the runner's code or the calls it made: its innermost frame is not the runner's."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and not str(tb.tb_frame.f_globals.get("__name__", "")).startswith(_RUNNER)


def _guard_cell_handlers() -> None:
    """After a cell's code: guard its Python signal handlers (not SIGTERM's: a shutdown's step)."""
    for signum in tuple(_handled):
        handler = _getsignal(signum)
        if (callable(handler) and not isinstance(handler, _Guarded) and signum != signal.SIGTERM
                and not str(getattr(handler, "__module__", "")).startswith(_RUNNER)):
            signal.signal(signum, _Guarded(handler))
            _guarded.append(signum)


def _unguard_cell_handlers() -> None:
    """Before a cell's code: its handlers as it set them; an error one raised between cells, raised now."""
    while _guarded:
        handler = _getsignal(signum := _guarded[-1])
        if isinstance(handler, _Guarded):
            signal.signal(signum, handler.handler)
        _guarded.pop()  # (after: a signal's handler raising before it leaves this one to the next look)
    if _raised:
        raise _raised.pop()


#: What a cell's code is when its last expression is all it holds (most cells a test sends one
#: value at a time): the same code object ``compile`` makes of every empty ``<cell>`` module (made
#: here, as there, with this module's ``__future__`` flags), compiled once (4 us of a cell ``1``).
_EMPTY_CELL = compile(ast.Module(body=[], type_ignores=[]), "<cell>", "exec")


def exec_source(source: str, namespace: dict[str, Any]) -> Any:
    """Run ``source`` in ``namespace``; the value of a last expression statement, or ``None``.

    A trace function the cell sets traces the cells' code only, from one cell to the next: it is set
    aside as the cell's code ends, before the runner's own code runs (one that raised there, as a
    buggy tracer may, ended the worker: ``died``, exit code 70)."""
    tree = compile(source, "<cell>", "exec", ast.PyCF_ONLY_AST)  # not ast.parse: its frame showed in a SyntaxError
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    code = _EMPTY_CELL if not (tree.body or tree.type_ignores) else compile(tree, "<cell>", "exec")
    traced = False
    try:  # (this frame began untraced: only the cell's frames are traced; C calls alone until the finally)
        _unguard_cell_handlers()  # (may raise a handler's error: before the trace is set, which is then kept as it was)
        sys.settrace(_cell_trace[0])
        traced = True
        exec(code, namespace)
        value = None if last is None else eval(compile(last, "<cell>", "eval"), namespace)
    finally:
        if traced or sys.gettrace() is not None:  # (it dropped the cell's tracer: None, read untraced)
            _cell_trace[0] = sys.gettrace()
        sys.settrace(None)
        try:
            _guard_cell_handlers()
        except RecursionError:  # a limit the cell set too low even for this: end_of_cell raises it, then guards
            _guard_late[0] = True
    if value is not None:
        namespace["_"] = value
    return value
