"""What a kernel runner's failed start says: the transport's launch error, named for the kernel,
and the words for a hello that never came (a runner that ended, or a transport closed meanwhile).
"""

from __future__ import annotations

from ..errors import CLOSED_TRANSPORT_HINT, KernelStartError, TransportLostError
from .contract import Launched, LaunchSpec, Transport

__all__ = ["launch_named", "no_hello"]


def launch_named(transport: Transport, spec: LaunchSpec) -> Launched:
    """``transport.launch(spec)``; its ``KernelStartError`` names the kernel, and an ``OSError`` it let
    through is one too (a transport of the user's own whose ``Popen`` found no interpreter: that came
    out of ``start_kernel`` as a bare ``FileNotFoundError``); a ``TransportLostError`` stays as it is.

    :raises KernelStartError: if the transport could not start the runner (``kernel_id`` set).
    :raises TransportLostError: as the transport raised it.
    """
    try:
        return transport.launch(spec)
    except KernelStartError as exc:  # the error names the kernel, whichever transport raised it
        if exc.facts.get("kernel_id") == spec.kernel_id:
            raise
        raise KernelStartError(exc.message, **{**exc.facts, "kernel_id": spec.kernel_id}) from None
    except OSError as exc:
        if isinstance(exc, TransportLostError):
            raise
        raise KernelStartError(f"the {transport.name} transport could not start the kernel runner: "
                               f"{type(exc).__name__}: {exc}", kernel_id=spec.kernel_id) from exc


def no_hello(transport: str, timeout: float, exc: BaseException | None, code: int | None, log: str, *,
             closed: bool = False, left: str | None = None) -> str:
    """The start error's text: how the runner ended (its exit status when known) and its log's tail.

    :param transport: the transport's name.
    :param timeout: the seconds the hello was awaited.
    :param exc: what ended the wait (``TimeoutError``, or the channel's end; ``None``: the hello came,
        but the transport was closed meanwhile).
    :param code: the runner's exit status, if known.
    :param log: the runner log's tail (``""``: none).
    :param closed: the transport was closed meanwhile (:meth:`~.contract.Transport.was_closed`): its
        close ended the runner's channel, which said "the ssh kernel runner ended during start, before
        its hello"; the text then ends with :data:`~pytest_hermes_kernel.errors.CLOSED_TRANSPORT_HINT`.
    :param left: the runner's label when it was not seen gone and its kill was not confirmed (it may still run).
    """
    if closed:
        head = f"this {transport} transport was closed during the kernel's start (before its runner's hello)"
    elif isinstance(exc, TimeoutError):
        head = f"the {transport} kernel runner did not say hello within {timeout} s: {exc}"
    elif code is None:
        head = f"the {transport} kernel runner ended during start, before its hello: {exc}"
    else:
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        head = f"the {transport} kernel runner died during start ({how}), before its hello"
    text = head + (f"\nrunner log (tail):\n{log}" if log else "")
    if left is not None:
        text += (f"\nits runner ({left}) was not seen gone and its kill was not confirmed "
                 "(is its host paused or unreachable?): it may still run")
    return text + (f"\n{CLOSED_TRANSPORT_HINT}" if closed else "")
