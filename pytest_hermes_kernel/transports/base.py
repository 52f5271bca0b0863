"""The transport contract: where and how a kernel runner runs.

A transport starts the kernel runner and hands back a :class:`Launched` record with a byte
stream to it. Everything above (channel, handle, registry, watchdog) is the same for every
transport. Who calls what, and when:

* :meth:`Transport.launch` is called by :class:`~pytest_hermes_kernel.kernel.handle.KernelHandle`
  once per runner (the first start, and again only when the runner itself was lost).
* :meth:`Transport.reattach` is called when the stream broke but the runner may still be alive
  (docker, ssh); local kernels cannot be re-attached (their channel is the lease).
* :meth:`Transport.kill` is the last resort when the runner does not answer: it ends the
  runner's whole process tree from outside and returns whether it saw it gone.
* :meth:`Transport.alive` probes the runner without the channel.
* :meth:`Transport.cleanup` removes what the launch left (kernel dir); it runs after the kernel
  is gone and never raises.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..kernel.channel import ByteStream


@dataclass
class LaunchSpec:
    """What a runner needs: ``config`` goes to the runner's stdin as JSON (never argv)."""

    kernel_id: str
    config: dict[str, Any]
    env: dict[str, str]
    cwd: str | None = None
    python: str | None = None


@dataclass
class Launched:
    """A started runner. ``pid`` is the supervisor's pid where the host can see it."""

    stream: ByteStream
    pid: int | None = None
    kernel_dir: str | None = None
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Transport(ABC):
    """Base class of local, docker, ssh and user transports."""

    name: ClassVar[str] = "abstract"
    reattachable: ClassVar[bool] = False
    """Whether a broken stream may be re-attached to a runner that kept its state."""

    @property
    def runs_on_this_host(self) -> bool:
        """Whether kernels run on this machine's kernel (a memory cgroup made here can hold them)."""
        return False

    @abstractmethod
    def launch(self, spec: LaunchSpec) -> Launched:
        """Start a kernel runner and connect to it.

        :raises KernelStartError: if it cannot be started; the message says why.
        """

    def reattach(self, launched: Launched) -> ByteStream:
        """Open a new stream to a runner whose stream broke.

        :raises TransportLostError: if the runner cannot be reached.
        """
        from ..errors import TransportLostError

        raise TransportLostError(f"the {self.name} transport cannot re-attach to a kernel runner")

    @abstractmethod
    def kill(self, launched: Launched) -> bool:
        """SIGKILL the runner's whole process tree from outside; True when seen gone."""

    @abstractmethod
    def alive(self, launched: Launched) -> bool:
        """Whether the runner's supervisor process still exists."""

    def cleanup(self, launched: Launched) -> None:
        """Remove the launch's leftovers (kernel dir, relay); never raises."""

    def locator(self, launched: Launched) -> dict[str, Any]:
        """Picklable facts another process needs to find this kernel (see :meth:`kernel_processes`)."""
        return {"runner_pid": launched.pid, "kernel_dir": launched.kernel_dir}

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        """Descriptions of live processes that belong to kernel ``kernel_id``, wherever it runs.

        Every kernel process carries ``HERMES_KERNEL_ID`` in its environment (runner, worker and
        what cells start); remote transports run the same scan inside the container or host.
        """
        from ..procs import processes_with_env

        return processes_with_env("HERMES_KERNEL_ID", kernel_id)

    def signal_pid(self, launched: Launched, pid: int, sig: int) -> None:
        """Send ``sig`` to ``pid`` where the kernel runs (fault injection: ``kernel_sigkill``)."""
        import os

        os.kill(pid, sig)

    def describe(self) -> str:
        """One line for the report header."""
        return self.name

    def close(self) -> None:
        """Release what the transport holds (containers, connections); idempotent."""
