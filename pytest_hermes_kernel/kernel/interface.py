"""The ``Kernel`` protocol: what a test (or a fault) may use of a kernel the fixtures gave it.

Three classes satisfy it structurally: :class:`~pytest_hermes_kernel.kernel.handle.KernelHandle`
(the kernel runs under this process), the fault layer's ``HarnessKernel`` (its host is a
separate process the test can SIGKILL) and ``FaultingKernel`` (any of them with faults that
fire at cell counts). The plugin's fixtures hand out a :class:`Kernel`, and the fault injector
works on one: it reaches the kernel only through these members (the transport it runs on and
its launch record, never a private channel).

Lives in the core so that the plugin and the fault layer can both import it without an
import against the layer direction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import threading

    from .contract import Launched, Transport
    from .options import KernelOptions
    from .results import CellResult, ExitInfo, KernelInfo

__all__ = ["Kernel", "KernelListener"]

KernelListener = Callable[[str, Any, Any], None]
"""``listener(event, kernel, payload)``: ``started`` (payload ``None``), ``running`` (payload
``None``: the cell now running has started in the worker; only with
``KernelOptions.report_running``, called on the cell's thread or, for a harness kernel, its
reader's), ``result`` (a :class:`CellResult`), ``raised`` (the
:class:`~pytest_hermes_kernel.errors.HermesKernelError` an ``execute`` raised instead of returning
a result: the kernel shut down, its host gone), ``lost`` (a :class:`~.lifecycle.Loss`, once per
loss) and ``shutdown`` (an :class:`ExitInfo`)."""


class Kernel(Protocol):
    """One live kernel a test holds (see module docstring)."""

    @property
    def kernel_id(self) -> str:
        """uuid4 hex of the kernel."""
        ...

    @property
    def generation(self) -> int:
        """Restarts behind this kernel so far; state is lost when it changes."""
        ...

    @property
    def pid(self) -> int | None:
        """Pid of the interpreter running cells, where the kernel runs."""
        ...

    @property
    def runner_pid(self) -> int | None:
        """Pid of the kernel runner's supervisor, where the kernel runs."""
        ...

    @property
    def alive(self) -> bool:
        """Whether the kernel can take a cell now (a cheap check, no round trip)."""
        ...

    @property
    def transport(self) -> Transport:
        """The transport the kernel runs on (for a harness kernel: this process's transport of
        the same name, which can see and signal the kernel's processes)."""
        ...

    @property
    def launched(self) -> Launched | None:
        """The launch record in this process; ``None`` when the launch lives in another
        process (a harness kernel) or the runner is gone."""
        ...

    @property
    def options(self) -> KernelOptions:
        """The options the kernel was started with."""
        ...

    def info(self, **changes: Any) -> KernelInfo:
        """Facts about the kernel now, with ``changes`` applied."""
        ...

    def execute(self, code: str, *, timeout: float | None = None, raise_on_timeout: bool = False,
                cancel: threading.Event | None = None) -> CellResult:
        """Run ``code`` in the kernel's namespace; ``timeout`` in seconds (``None``: the option's);
        ``cancel``: set from any thread, it starts the cell's ladder now (``aexecute`` passes it)."""
        ...

    def interrupt(self) -> None:
        """SIGINT the running cell; the namespace is kept."""
        ...

    def restart(self) -> KernelInfo:
        """A fresh worker; state is lost (reported as ``reason="reset"``)."""
        ...

    def shutdown(self, now: bool = False) -> ExitInfo:
        """End the kernel (``now``: SIGKILL at once); idempotent."""
        ...

    def close(self) -> ExitInfo:
        """Alias of :meth:`shutdown`."""
        ...

    def add_listener(self, listener: KernelListener) -> None:
        """Call ``listener`` on the kernel's events (see :data:`KernelListener`)."""
        ...
