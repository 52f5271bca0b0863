"""The host harness: a kernel whose host is a separate process the test can SIGKILL.

:class:`HarnessKernel` satisfies the :class:`~pytest_hermes_kernel.kernel.interface.Kernel`
protocol (what tests use of a kernel: ``execute``, ``interrupt``, ``restart``, ``shutdown``,
``pid``, ``kernel_id``, ``transport``, ...) and forwards each call to ``_harness_host`` running
in its own process. :meth:`HarnessKernel.kill_host` SIGKILLs that process; :meth:`wait_kernel_gone` then
watches, from the test process, for every process of the kernel to disappear.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..containers.sharing import current_run_id
from ..errors import ConfigError, HermesKernelError, HostGoneError, KernelStartError
from ..kernel.lifecycle import Loss
from ..kernel.options import KernelOptions
from ..kernel.files import TransferReport
from ..kernel.results import CellResult, ExitInfo, KernelInfo
from ..transports import get_transport

if TYPE_CHECKING:
    from ..kernel.contract import Launched, Transport
    from ..kernel.interface import KernelListener

_LEN = struct.Struct(">I")
"""The length prefix of each pickled request and reply (see :mod:`._harness_host`)."""
EVENT_ID = 0
"""The reply id of kernel events the host forwards to the test process (requests count from 1).
Defined here, not in :mod:`._harness_host`: the package must not import the module that
``python -m`` runs (runpy warns, and under ``-W error`` the host dies at once)."""


def _registration(transport: str) -> tuple[list[str], bytes] | None:
    """What the harness host needs to make ``transport`` as this process does, when it is a name
    given to :func:`~pytest_hermes_kernel.transports.register_transport` here: this process's
    ``sys.path`` and the factory pickled (by reference: a module-level class or function). The host
    knew only the built-in names: a registered backend's ``hermes_host_sigkill`` test errored with
    ``unknown transport``, and one registered over a built-in name ran on the built-in one.

    :raises ConfigError: if ``transport`` is no name known here, or its factory cannot be pickled.
    """
    from ..transports import registered, transport_factory, transport_names

    if transport not in transport_names():
        raise ConfigError(f"the host harness (hermes_host_sigkill, hermes_faults.harness) runs the kernel's host in "
                          f"a separate process, which makes the {transport!r} transport by its name: no transport is "
                          f"registered as {transport!r} (a hermes_transport fixture's own instance cannot be handed "
                          f"over); register its factory: register_transport({transport!r}, factory) in a conftest.py")
    if not registered(transport):
        return None
    factory = transport_factory(transport)
    try:
        return list(sys.path), pickle.dumps(factory)
    except Exception as exc:  # noqa: BLE001 - pickling raises several kinds
        raise ConfigError(f"the host harness (hermes_host_sigkill, hermes_faults.harness) runs the kernel's host in a "
                          f"separate process, which makes the registered transport {transport!r} with its factory, "
                          f"but {factory!r} cannot be handed to it ({type(exc).__name__}: {exc}): register a "
                          f"module-level class or function, not a lambda or a local one") from None


class _HandleMembers:
    """The :class:`~pytest_hermes_kernel.kernel.handle.KernelHandle` members a test reads beyond the
    ``Kernel`` protocol, for :class:`HarnessKernel` (each raised ``AttributeError`` before)."""

    pid: int | None
    generation: int

    def _call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError

    def start(self) -> _HandleMembers:
        """The kernel started with its host: returns it (see :meth:`KernelHandle.start`)."""
        return self

    def cancel(self) -> None:
        """Start the timeout ladder of the host's running cell now (see :meth:`KernelHandle.cancel`)."""
        self._call("cancel", timeout=30)

    @property
    def worker_pid(self) -> int | None:
        """The same as :attr:`pid`."""
        return self.pid

    @property
    def restart_count(self) -> int:
        """The same as :attr:`generation`."""
        return self.generation

    def upload(self, local_path: str | os.PathLike[str], kernel_path: str, *,
               max_bytes: int | None = None) -> TransferReport:
        """Copy a local file or tree into the kernel's working dir (see :meth:`KernelHandle.upload`):
        the host, on this machine, copies it; a relative ``local_path`` is this process's.

        :raises HostGoneError: if the host was killed before or during the transfer.
        """
        report: TransferReport = self._call("upload", os.path.abspath(local_path), kernel_path, max_bytes=max_bytes)
        return report

    def download(self, kernel_path: str, local_path: str | os.PathLike[str], *,
                 max_bytes: int | None = None) -> TransferReport:
        """Copy a file or tree of the kernel's working dir out (see :meth:`KernelHandle.download`)."""
        report: TransferReport = self._call("download", kernel_path, os.path.abspath(local_path), max_bytes=max_bytes)
        return report


#: How the host process starts: as ``python -m`` would, but with the caller's working dir after the
#: standard library and the installed packages on ``sys.path`` (first, a project's own ``types.py``
#: shadowed the standard one, and the host died at once: "the harness host ... is gone").
_HOST_BOOT = ("import sys\nif sys.path[:1] == ['']:\n    sys.path.append(sys.path.pop(0))\nimport runpy\n"
              "runpy.run_module('pytest_hermes_kernel.faults._harness_host', run_name='__main__', alter_sys=True)\n")


class HarnessKernel(_HandleMembers):
    """A kernel owned by a separate host process (see module docstring); a
    :class:`~pytest_hermes_kernel.kernel.interface.Kernel`.

    :param transport: transport name; the harness process makes its own (shared) transport of
        that name, and this process uses its own shared one of the same name to see and signal
        the kernel's processes (:attr:`transport`).
    :param options: the kernel's :class:`KernelOptions`, or a dict of its fields (tools cannot
        cross into the harness process).
    :param transport_options: constructor options of the harness's transport (picklable).
    :param start_timeout: seconds to wait for the harness and its kernel to come up.
    :param shares_run_host: the harness's transport shares this process's run container (docker)
        or sshd container (ssh), which this process then joins; ``None``: when no
        ``transport_options`` are given. The plugin's harness passes the run's defaults
        (``--hermes-image``, ``--hermes-reuse``), the same options as this process's shared transport.
    :raises KernelStartError: if the harness or its kernel does not start.
    """

    def __init__(self, transport: str = "local", options: KernelOptions | Mapping[str, Any] | None = None, *,
                 transport_options: dict[str, Any] | None = None, start_timeout: float = 120.0,
                 shares_run_host: bool | None = None) -> None:
        self.transport_name = transport
        self.options = options if isinstance(options, KernelOptions) else KernelOptions(**dict(options or {}))
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._listeners: list[KernelListener] = []
        self._loss_echo = False  # the last result reported a death its next cell repeats
        self._stopping = False
        self._ended: ExitInfo | None = None  # the first shutdown's ExitInfo, every later one's
        self._reader_done = False  # the host's replies ended: guarded by _lock with _pending
        self.cells_run = 0
        registration = _registration(transport)  # before the host starts: a factory it cannot get is a ConfigError
        self.proc = subprocess.Popen([sys.executable, "-c", _HOST_BOOT],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        self.host_pid = self.proc.pid
        self._reader = threading.Thread(target=self._read_replies, name="hermes-harness-reader", daemon=True)
        self._reader.start()
        fields = {f.name: getattr(self.options, f.name) for f in dataclasses.fields(self.options)}
        try:
            self.facts = self._call("start", transport, fields, dict(transport_options or {}), current_run_id(),
                                    registration,  # a transport registered here: the host registers it too
                                    timeout=start_timeout)  # the host joins our run (run id in the start message)
        except HermesKernelError:
            self._end_host()
            raise
        except Exception as exc:
            self._end_host()
            raise KernelStartError(f"the harness host could not start a {transport} kernel: {exc}") from None
        if not transport_options if shares_run_host is None else shares_run_host:
            self._join_run_host()  # the run's shared kernel host: this process too is a member of it
        self.kernel_id: str = self.facts["kernel_id"]
        self.pid: int | None = self.facts["pid"]
        self.runner_pid: int | None = self.facts["runner_pid"]
        self.generation = 0
        self.killed_at: float | None = None

    def _join_run_host(self) -> None:
        """Join the run's shared container (docker) or sshd container (ssh) the harness host
        started: with the host its only member, nothing removed it once the host was SIGKILLed (it
        outlived the run), and another run's start-up sweep could take it while this test ran."""
        t = self.transport
        if t.name == "docker":
            t.shared_container()  # type: ignore[attr-defined]
        elif t.name == "ssh" and getattr(t, "target", None) is None:
            t.connection()  # type: ignore[attr-defined]  # connecting joins the run's sshd container

    # ------------------------------------------------------------------------------ plumbing
    def _read_replies(self) -> None:
        out = self.proc.stdout
        while True:
            head = out.read(_LEN.size)
            if len(head) < _LEN.size:
                break
            (n,) = _LEN.unpack(head)
            rid, ok, value = pickle.loads(out.read(n))
            if rid == EVENT_ID:
                self._emit(*value)
                continue
            fut = self._pending.pop(rid, None)
            if fut is not None:
                fut.set_result(value) if ok else fut.set_exception(value)
        gone = HostGoneError(f"the harness host (pid {self.host_pid}) is gone; its kernel had no host",
                             kernel_id=getattr(self, "kernel_id", None), host_pid=self.host_pid)
        with self._lock:  # a request submitted from now on fails at once (no reader would answer it)
            self._reader_done = True
            pending, self._pending = list(self._pending.values()), {}
        for fut in pending:
            fut.set_exception(gone)

    def _submit(self, method: str, *args: Any, **kwargs: Any) -> Future[Any]:
        rid = next(self._ids)
        fut: Future[Any] = Future()
        data = pickle.dumps((rid, method, args, kwargs))
        with self._lock:
            if self._reader_done or self.proc.poll() is not None:
                fut.set_exception(HostGoneError(f"the harness host (pid {self.host_pid}) is gone",
                                                host_pid=self.host_pid))
                return fut
            self._pending[rid] = fut
            try:
                self.proc.stdin.write(_LEN.pack(len(data)) + data)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                self._pending.pop(rid, None)
                fut.set_exception(HostGoneError(f"the harness host (pid {self.host_pid}) is gone",
                                            host_pid=self.host_pid))
        return fut

    def _call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        return self._submit(method, *args, **kwargs).result(timeout)

    # ------------------------------------------------------------------------------ kernel API
    def execute(self, code: str, *, timeout: float | None = None, raise_on_timeout: bool = False,
                cancel: threading.Event | None = None) -> CellResult:
        """Run a cell on the harness's kernel (see :meth:`KernelHandle.execute`); ``cancel``, an
        event of this process, is relayed to the host as its kernel's ``cancel()`` when set.

        :raises HostGoneError: if the host was killed before or during the cell.
        """
        if cancel is not None and not isinstance(cancel, threading.Event):
            raise TypeError(f"cancel must be a threading.Event, not {type(cancel).__name__}: nothing was sent")
        try:
            cell = self.execute_async(code, timeout=timeout, raise_on_timeout=raise_on_timeout)
            if cancel is not None:
                threading.Thread(target=self._relay_cancel, args=(cancel, cell), daemon=True,
                                 name="hermes-harness-cancel").start()
            value = cell.result()
        except HermesKernelError as exc:
            if getattr(exc, "result", None) is None:  # no result told: the story names the cell by this
                self._emit("raised", exc)
            raise
        return self._unpack(value)

    def _relay_cancel(self, cancel: threading.Event, cell: Future[Any]) -> None:
        """Wait for ``cancel`` while ``cell`` runs; once set, cancel the host's running cell, again
        every 0.2 s until it ends (one that reaches the host before its cell began does nothing)."""
        while not cell.done():
            if cancel.wait(0.05) and not cell.done():
                self._submit("cancel")
                futures_wait([cell], timeout=0.2)

    def execute_async(self, code: str, **kwargs: Any) -> Future[Any]:
        """Start a cell and return a future (the test may kill the host while it runs)."""
        return self._submit("execute", code, **kwargs)

    def _unpack(self, value: Any) -> CellResult:
        result, self.pid, self.runner_pid = value
        self.generation = result.kernel.generation
        self.cells_run += 1
        self._count_loss(result)
        self._emit("result", result)
        return result

    def _count_loss(self, result: CellResult) -> None:
        """A ``lost`` event per loss the harness's kernel reported (the handle's own events stay
        in the harness process): the dying cell's, not again its echo on the next cell."""
        info, echo = result.kernel, self._loss_echo
        self._loss_echo = bool(info.state_lost and result.status in ("died", "exited", "timeout"))
        if info.state_lost and info.reason and not echo:
            self._emit("lost", Loss(reason=info.reason, exit_code=info.exit_code, signal=info.signal,
                                    oom_killed=bool(info.oom_killed), note=info.note or ""))

    def interrupt(self) -> None:
        self._call("interrupt", timeout=30)

    def restart(self) -> KernelInfo:
        info: KernelInfo = self._call("restart", timeout=60)
        self.generation = info.generation
        return info

    def shutdown(self, now: bool = False) -> ExitInfo:
        """Shut the kernel down through the host, then end the host; idempotent.

        :returns: how the kernel ended (a later call: the first call's); ``already-exited`` when the host was gone (SIGKILLed).
        """
        if self._ended is not None:  # (a second call said "already-exited: its host was gone" of a host shut down politely)
            return self._ended
        info, self._stopping = None, True
        if self.proc.poll() is None:  # also None while a fault timer's kill_host() waits on the host
            try:
                info = self._call("shutdown", now, timeout=30)
            except HermesKernelError:
                info = None
            try:  # a host SIGKILLed mid-call leaves the request in the buffer: closing flushes it
                self.proc.stdin.close()
            except (OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill_host()
        self._end_host(kill=False)
        exit_info = info if isinstance(info, ExitInfo) else ExitInfo(step="already-exited", note="its host was gone")
        if self._ended is None:
            self._ended = exit_info
            self._emit("shutdown", exit_info)
        return self._ended

    def close(self) -> ExitInfo:
        """Alias of :meth:`shutdown`."""
        return self.shutdown()

    @property
    def stopping(self) -> bool:
        """``shutdown()`` was called (as :attr:`KernelHandle.stopping <.kernel.handle.KernelHandle.stopping>`)."""
        return self._stopping

    @property
    def alive(self) -> bool:
        """Whether the host (and so, as far as this process knows, the kernel) is up."""
        return self.proc.poll() is None

    @property
    def transport(self) -> Transport:
        """This process's shared transport of the harness's transport name."""
        return get_transport(self.transport_name)

    @property
    def launched(self) -> Launched | None:
        """Always ``None``: the launch record lives in the harness process."""
        return None

    def info(self, **changes: Any) -> KernelInfo:
        base = KernelInfo(kernel_id=self.kernel_id, transport=self.transport_name, generation=self.generation,
                          reused=self.cells_run > 0, pid=self.pid)
        return base.replace(**changes) if changes else base

    def add_listener(self, listener: KernelListener) -> None:
        """Call ``listener(event, kernel, payload)`` on ``running`` (forwarded by the host as the
        cell starts), ``result``, ``raised`` (the host gone during a cell, say), ``lost`` and
        ``shutdown``, seen from this process (``started`` has happened by the time a harness
        kernel exists)."""
        self._listeners.append(listener)

    def _emit(self, event: str, payload: Any) -> None:
        for listener in list(self._listeners):
            try:
                listener(event, self, payload)
            except Exception:  # noqa: BLE001 - an observer must never break the kernel
                pass

    def _end_host(self, kill: bool = True) -> None:
        """SIGKILL the host if it still runs (``kill``; else wait for its end), and close what this
        process holds of it (its pipes: a harness whose kernel could not start left two open)."""
        self.kill_host() if kill else self.proc.wait()
        self._reader.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except (OSError, ValueError):
                pass

    # ------------------------------------------------------------------------------ the fault
    def kill_host(self) -> None:
        """SIGKILL the host process (no cleanup of any kind runs in it)."""
        if self.proc.poll() is None:
            self.killed_at = time.monotonic()
            os.kill(self.proc.pid, signal.SIGKILL)
            self._emit("lost", Loss(reason="host_gone", signal=9, note="the kernel's host was SIGKILLed"))
        self.proc.wait()

    def survivors(self) -> list[str]:
        """Processes of this kernel that are still alive, wherever it runs."""
        return self.transport.kernel_processes(self.kernel_id, self.facts.get("locator"))

    def kill_survivors(self) -> None:
        """SIGKILL what is left of the kernel after its host died (so the next test starts clean),
        then remove its kernel dir once it is gone (a SIGKILLed runner cannot: filecell's stayed)."""
        for line in self.survivors():
            try:
                self.transport.signal_pid(None, int(line.split(":", 1)[0]), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        if not self.wait_kernel_gone(5.0):
            self.transport.cleanup_kept(self.facts.get("locator") or {})

    def wait_kernel_gone(self, bound: float) -> list[str]:
        """Wait up to ``bound`` seconds for every process of the kernel to end.

        :returns: what is still alive at the deadline (empty when the kernel is gone).
        """
        deadline = time.monotonic() + bound
        while True:
            alive = self.survivors()
            if not alive or time.monotonic() >= deadline:
                return alive
            time.sleep(0.05)

    def __enter__(self) -> HarnessKernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
