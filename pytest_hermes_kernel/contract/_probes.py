"""Probes the contract suite uses: deadlines, pids *where the kernel runs*, cells that say they run.

Waiting is with deadlines; cells run in a thread and report that they are running.

A docker or ssh kernel's pids mean nothing in this host's process table, so every pid check
goes through the transport (:meth:`Transport.kernel_processes`, :meth:`Transport.signal_pid`).
A test that acts on a running cell (interrupt, drop, restart) waits for the cell to say it runs
(:class:`CellStarted`, or a process of the cell: :func:`process_of`), never for a fixed time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from ..kernel.results import CellResult

T = TypeVar("T")


def wait_until(pred: Callable[[], T], timeout: float, *, interval: float = 0.02, what: str = "") -> T:
    """Poll ``pred`` until it returns something truthy; return that value.

    The last poll starts at or after the deadline: a probe that takes long (a ``docker exec``
    or an ssh command on a loaded machine) and began before it says nothing of the state at the
    deadline, so it is never the last word.

    :param timeout: seconds before giving up.
    :raises AssertionError: if ``pred`` stayed falsy for ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        began = time.monotonic()
        value = pred()
        if value:
            return value
        if began >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or getattr(pred, '__name__', pred)}")
        time.sleep(interval)


def kernel_pids(kernel: Any, kernel_id: str | None = None) -> set[int]:
    """Live (non-zombie) pids of ``kernel``'s processes where it runs (host, container, ssh host)."""
    transport, launched = kernel.transport, kernel.launched
    locator = transport.locator(launched) if launched is not None else None
    lines = transport.kernel_processes(kernel_id or kernel.kernel_id, locator)
    return {int(line.split(":", 1)[0]) for line in lines}


def process_of(kernel: Any, command: str) -> int | None:
    """The pid of a live process of ``kernel`` whose command line is ``command``, seen where the
    kernel runs (``None`` if there is none): a cell that starts ``sleep 30`` reports that it runs."""
    transport, launched = kernel.transport, kernel.launched
    locator = transport.locator(launched) if launched is not None else None
    for line in transport.kernel_processes(kernel.kernel_id, locator):
        pid, _, cmdline = line.partition(":")
        if cmdline.strip() == command:
            return int(pid)
    return None


def gone_in_kernel(kernel: Any, pid: int | None) -> bool:
    """True when ``pid`` (a pid where ``kernel`` runs) is no longer one of its live processes."""
    return pid is None or pid not in kernel_pids(kernel)


def reaped_in_kernel(kernel: Any, pid: int) -> bool:
    """True when ``pid`` no longer exists where ``kernel`` runs, not even as a zombie: its parent
    (the runner, for a worker) has reaped it. A SIGKILLed process leaves the kernel's process
    listing (its environment unreadable) a moment before it can be reaped."""
    try:
        kernel.transport.signal_pid(kernel.launched, pid, 0)
    except ProcessLookupError:
        return True
    return False


def signal_in_kernel(kernel: Any, pid: int, sig: int) -> None:
    """Send ``sig`` to ``pid`` where ``kernel`` runs (never to a host pid of the same number)."""
    try:
        kernel.transport.signal_pid(kernel.launched, pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_in_thread(kernel: Any, code: str, **kwargs: Any) -> Future[CellResult]:
    """Start ``kernel.execute(code, **kwargs)`` in a thread; the future resolves with its result
    (or its exception), so the test can act on the kernel while the cell runs."""
    return call_in_thread(kernel.execute, code, **kwargs)


def call_in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """Start ``fn(*args, **kwargs)`` in a thread of its own; the future resolves with what it
    returns (or raises). The thread ends with the call."""
    fut: Future[T] = Future()

    def run() -> None:
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            fut.set_exception(exc)

    threading.Thread(target=run, name="hermes-contract-cell", daemon=True).start()
    return fut


class CellStarted:
    """A host tool that a cell calls to report that it is running (a condition, not a sleep).

    Offer it with ``tools=probe.tools()`` and begin the cell with :attr:`CODE`; :meth:`wait`
    returns once the cell has called it, i.e. the cell's code is executing in the kernel. The
    call's result may still be on its way to the kernel then: to break the stream, wait for a
    process of the cell instead (:func:`process_of`).
    """

    TOOL = "cell_started"
    CODE = f"import hermes_tools\nhermes_tools.{TOOL}()\n"

    def __init__(self) -> None:
        self._event = threading.Event()

    def __call__(self) -> None:
        self._event.set()

    def tools(self) -> dict[str, Callable[[], None]]:
        """``{name: tool}`` for ``tools=`` of a kernel factory."""
        return {self.TOOL: self}

    def wait(self, timeout: float = 10.0) -> None:
        """Wait until a cell called the tool; reset for the next cell.

        :param timeout: seconds.
        :raises AssertionError: if no cell called it within ``timeout``.
        """
        if not self._event.wait(timeout):
            raise AssertionError(f"the cell did not report that it is running within {timeout} s")
        self._event.clear()


#: Seconds the stream probe asks ``recv`` to wait, and past which its not returning is a hang.
RECV_PROBE_TIMEOUT_S = 0.2
RECV_HANG_S = 10.0
#: What the probe found per transport class: ``""`` when its stream's ``recv`` kept its timeout.
_recv_found: dict[type, str] = {}


def recv_timeout_problem(transport: Any, start: Callable[[], Any]) -> str:
    """``""`` when the stream of a kernel ``start()`` gives on ``transport`` raises ``TimeoutError``
    from ``recv(timeout)`` once nothing came within ``timeout`` (the
    :class:`~pytest_hermes_kernel.kernel.contract.ByteStream` rule: the reader of a cell's results
    waits in it, so every budget and watchdog rests on it); else what it did. Looked at once per
    transport class, on a kernel of its own, idle, whose stream it reads itself (so it shuts that
    kernel down after; a runner whose ``recv`` hung is killed first, so that it returns)."""
    if type(transport) not in _recv_found:
        kernel = start()
        try:
            _recv_found[type(transport)] = _recv_finding(kernel)
        finally:
            kernel.shutdown()
    return _recv_found[type(transport)]


def _recv_finding(kernel: Any) -> str:
    stream, got = kernel.launched.stream, []

    def read() -> None:
        try:
            got.append(stream.recv(RECV_PROBE_TIMEOUT_S))
        except BaseException as exc:  # noqa: BLE001 - what it raised is the finding
            got.append(exc)

    reader = threading.Thread(target=read, name="hermes-contract-recv-probe", daemon=True)
    reader.start()
    reader.join(RECV_HANG_S)
    name = f"{type(stream).__name__}.recv({RECV_PROBE_TIMEOUT_S})"
    if not got:
        kernel.transport.kill(kernel.launched)
        found = f"{name} on an idle kernel's stream had not returned after {RECV_HANG_S} s"
    elif isinstance(got[0], bytes) and got[0] == b"":
        found = f"{name} on an idle kernel's stream returned b'' (the end of the stream) when nothing came"
    elif isinstance(got[0], BaseException) and not isinstance(got[0], TimeoutError):
        found = f"{name} on an idle kernel's stream raised {type(got[0]).__name__}: {got[0]}"
    else:
        return ""  # TimeoutError, or bytes the runner sent unasked (which this probe cannot judge)
    return (f"{found}: a ByteStream's recv(timeout) raises TimeoutError once nothing came within timeout seconds "
            "(the reader of every cell waits in it: a recv that blocks on holds each budget and watchdog for good, "
            "and every case that waits on one hangs); SocketStream(sock) does so for any connected socket")
