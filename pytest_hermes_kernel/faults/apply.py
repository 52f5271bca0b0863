"""Fault specs -> what a kernel needs for them on one transport: the one path for markers and
catalog scenarios.

Three steps, in the order a caller meets them:

1. :func:`transport_options`: constructor options of the transport, needed before it exists:
   a memory limit and a container of its own for ``oom`` on docker and ssh, a
   :class:`~.proxy.ProxyRoute` on ssh's ``connect_via`` seam for ``transport_drop`` (drops then
   cut the TCP link in front of sshd).
2. :func:`plan_faults`: given the transport, what the faults need of the kernel, as a frozen
   :class:`FaultPlan`: the skip reason when a fault cannot apply on this transport, a memory
   cgroup for ``oom`` on this host, the decorator transport for drops, the host harness and the
   short orphan timer for ``host_sigkill``, and the bound within which a kernel must be gone
   after its host died.
3. :func:`apply_faults`: carry the plan out: create the cgroup, wrap the transport, change the
   kernel options (``report_running`` for ``during_cell`` faults, which time themselves from the
   cell's start in the worker). The :class:`FaultSetup` it returns is closed after the kernel is gone.

Firing the faults at their trigger points is :mod:`.injector`'s job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..kernel.contract import Transport
from ..kernel.options import KernelOptions
from .cgroup import MemoryCgroup, create_memory_cgroup
from .faulty_transport import FaultyTransport
from .proxy import ProxyRoute
from .spec import FaultSpec

__all__ = ["FaultPlan", "FaultSetup", "apply_faults", "host_death_bound", "plan_faults", "skip_reason",
           "transport_options"]

LEASE_DEATH_BOUND_S = 2.0
"""Seconds a kernel whose channel is its host's lease (local) may take to die with the host: the
runner sees EOF at once and kills its worker's group (handed case B01)."""

ORPHAN_DEATH_MARGIN_S = 3.0
"""Seconds added to a detached runner's orphan timer: the timer's tick, killing the worker's
group and the process scan that confirms it, on a loaded 2-core machine."""

HOST_SIGKILL_ORPHAN_TIMEOUT_S = 5.0
"""The orphan timer ``host_sigkill`` gives a detached runner (docker, ssh) when the kernel's own
is longer, so that the host's death is checked within seconds, not the default 60 s."""

CONTAINER_LIMIT_TRANSPORTS = ("docker", "ssh")
"""Transports whose container takes a memory limit (``mem_limit_bytes``, ``container="fresh"``)."""

MAX_DEATH_BOUND_S = 60.0
"""Longest host-death bound a test waits for; a longer one (filecell's 1800 s idle timer, a
transport-level orphan_timeout) skips the test with the reason."""


@dataclass(frozen=True)
class FaultPlan:
    """What a kernel needs so that its faults can happen, on one transport.

    :param specs: every fault of the test or scenario.
    :param skip: why the faults cannot apply on this transport; ``None`` when they can.
    :param memory_limit_bytes: run the kernel in a memory cgroup of this size (``oom`` on a
        transport whose kernels run on this host); ``None``: no cgroup.
    :param wrap_streams: run the kernel on a :class:`FaultyTransport` (drops).
    :param in_harness: the kernel's host is a separate process (``host_sigkill``).
    :param orphan_timeout: seconds of orphan timer the kernel is given; ``None``: unchanged.
    :param death_bound: seconds within which every process of the kernel must be gone after its
        host was SIGKILLed; ``None`` without ``host_sigkill``.
    """

    specs: tuple[FaultSpec, ...]
    skip: str | None = None
    memory_limit_bytes: int | None = None
    wrap_streams: bool = False
    in_harness: bool = False
    orphan_timeout: float | None = None
    death_bound: float | None = None

    @property
    def firing(self) -> tuple[FaultSpec, ...]:
        """The faults that fire at trigger points (all but ``oom``, a condition from the start)."""
        return tuple(s for s in self.specs if s.fires)


@dataclass
class FaultSetup:
    """A carried-out :class:`FaultPlan`: the transport and options to start the kernel with.

    :param plan: the plan it carries out.
    :param transport: the transport to start the kernel on (a :class:`FaultyTransport` around
        the given one when drops apply).
    :param options: the kernel options with the faults' changes.
    :param cgroup: the memory cgroup the kernel runs in, if any.
    """

    plan: FaultPlan
    transport: Transport
    options: KernelOptions
    cgroup: MemoryCgroup | None = None

    def close(self) -> None:
        """Remove what the faults made (the cgroup); call after the kernel is gone. Idempotent."""
        cgroup, self.cgroup = self.cgroup, None
        if cgroup is not None:
            cgroup.remove()


def transport_options(specs: Sequence[FaultSpec], transport_name: str, *, drops_on_demand: bool = False) -> dict[str, Any]:
    """Constructor options the faults need of the ``transport_name`` transport (empty: the shared one).

    :param drops_on_demand: the test may drop the link itself (``hermes_faults``), so ssh gets
        the fault proxy even without a ``transport_drop`` spec.
    """
    options: dict[str, Any] = {}
    for spec in specs:
        if spec.kind == "oom" and transport_name in CONTAINER_LIMIT_TRANSPORTS:
            options.update(mem_limit_bytes=spec.limit_bytes, container="fresh")
    drops = drops_on_demand or any(s.kind == "transport_drop" for s in specs)
    if drops and transport_name == "ssh":
        options["connect_via"] = ProxyRoute()
    return options


def host_death_bound(transport: Transport, orphan_timeout: float) -> float:
    """Seconds within which a kernel on ``transport`` must be gone after its host died.

    A lease runner (local: the channel is the host's lease) dies at EOF:
    :data:`LEASE_DEATH_BOUND_S`. A detached runner (re-attachable, or with a transport-level
    orphan timer) ends when its orphan timer runs out: that timer plus :data:`ORPHAN_DEATH_MARGIN_S`.

    :param orphan_timeout: the kernel's ``KernelOptions.orphan_timeout``, seconds; the
        transport's own :attr:`~Transport.orphan_timeout` wins when it sets one. A client that stays
        attached after the host died (:attr:`~Transport.attached_after_host_s`) comes first: on
        filecell a kernel outlived the bound by its poll window and holder (25.7 s against 8 s).
    """
    if _leases(transport):
        return LEASE_DEATH_BOUND_S
    timer = transport.orphan_timeout if transport.orphan_timeout is not None else orphan_timeout
    return float(timer) + transport.attached_after_host_s + ORPHAN_DEATH_MARGIN_S


def _leases(transport: Transport) -> bool:
    """Whether the runner's channel is its host's lease (it exits at EOF, no orphan timer)."""
    return transport.runs_on_this_host and not transport.reattachable and transport.orphan_timeout is None


def plan_faults(specs: Sequence[FaultSpec], transport: Transport, options: KernelOptions, *,
                drops_on_demand: bool = False) -> FaultPlan:
    """What ``specs`` need of a kernel on ``transport`` started with ``options`` (see :class:`FaultPlan`).

    :param drops_on_demand: wrap the streams even without a ``transport_drop`` spec, so the test
        can drop them itself (``hermes_faults``); ignored where drops do not apply.
    """
    specs = tuple(specs)
    skip = skip_reason(specs, transport)
    drops = any(s.kind == "transport_drop" for s in specs) or (drops_on_demand and transport.reattachable)
    oom = next((s for s in specs if s.kind == "oom"), None)
    plan = FaultPlan(specs, skip=skip, wrap_streams=drops,
                     memory_limit_bytes=oom.limit_bytes if oom is not None and transport.runs_on_this_host else None)
    host = next((s for s in specs if s.kind == "host_sigkill"), None)
    return plan if host is None or skip is not None else _with_host_sigkill(plan, host, transport, options)


def _with_host_sigkill(plan: FaultPlan, host: FaultSpec, transport: Transport, options: KernelOptions) -> FaultPlan:
    """``plan`` plus the host harness, the orphan timer and the death bound ``host`` needs."""
    orphan = _host_sigkill_orphan_timeout(transport, options)
    natural = host_death_bound(transport, orphan if orphan is not None else options.orphan_timeout)
    if natural > MAX_DEATH_BOUND_S:
        held = transport.attached_after_host_s
        return dataclasses.replace(plan, skip=(
            f"host_sigkill on {transport.name}: its kernels outlive their host until their orphan timer "
            f"({natural - ORPHAN_DEATH_MARGIN_S - held:g} s) by design, since nothing is attached between cells"
            + (f", after a client that stays attached {held:g} s" if held else "")
            + "; give the transport a short orphan_timeout" + (
                " (and short poll_window_s and hold_s on filecell)" if held else "") + " to test host death"))
    return dataclasses.replace(plan, in_harness=True, orphan_timeout=orphan, death_bound=natural if host.bound is None else host.bound)


def _host_sigkill_orphan_timeout(transport: Transport, options: KernelOptions) -> float | None:
    """The shorter orphan timer a detached runner needs for ``host_sigkill``; ``None``: keep it."""
    if _leases(transport) or transport.orphan_timeout is not None:
        return None  # a lease dies at EOF; a transport-level timer overrides the kernel's anyway
    if options.orphan_timeout <= HOST_SIGKILL_ORPHAN_TIMEOUT_S:
        return None
    return HOST_SIGKILL_ORPHAN_TIMEOUT_S


def skip_reason(specs: Sequence[FaultSpec], transport: Transport) -> str | None:
    """Why ``specs`` cannot apply on ``transport``, or ``None`` when they can.

    The one rule for markers and scenarios: a drop needs a re-attachable channel (local's
    channel is its host's lease: a drop there is a host death); ``oom`` needs a memory limit the
    kit can set. (``host_sigkill`` adds its own, known only with the kernel's options: see
    :func:`plan_faults`.)
    """
    if any(s.kind == "transport_drop" for s in specs) and not transport.reattachable:
        why = ("a drop of local's channel is a host death: use hermes_host_sigkill" if transport.name == "local" else
               "it has no standing stream that a drop could cut: each read is a command of its own"
               if transport.name == "filecell" else "a lost channel is not re-attached")
        return f"transport_drop does not apply to the {transport.name} transport: its channel is not re-attachable ({why})"
    if any(s.kind == "oom" for s in specs) and not (transport.runs_on_this_host or
                                                     transport.name in CONTAINER_LIMIT_TRANSPORTS):
        backend = getattr(transport, "backend", None)  # a filecell transport's: this machine's shell or not
        through = f" through {type(backend).__name__}, a backend whose kernels are not this host's" if backend else ""
        return (f"oom does not apply to the {transport.name} transport{through}: a memory limit is set with a memory "
                f"cgroup for kernels on this host, or the container's for {' and '.join(CONTAINER_LIMIT_TRANSPORTS)}")
    return None


def apply_faults(plan: FaultPlan, transport: Transport, options: KernelOptions, *,
                 link: ProxyRoute | None = None) -> FaultSetup:
    """Carry ``plan`` out for a kernel on ``transport`` with ``options``.

    :param link: the :class:`ProxyRoute` the transport was made with (:func:`transport_options`),
        so that drops cut the TCP link.
    :raises TransportUnavailableError: if the memory cgroup cannot be made here (the caller skips
        with the message).
    """
    if plan.orphan_timeout is not None:
        options = dataclasses.replace(options, orphan_timeout=plan.orphan_timeout)
    if any(s.during_cell is not None for s in plan.firing):
        options = dataclasses.replace(options, report_running=True)
    if plan.wrap_streams and plan.skip is None:
        transport = FaultyTransport(transport, link=link)
    cgroup = None
    if plan.memory_limit_bytes is not None:
        cgroup = create_memory_cgroup(plan.memory_limit_bytes)
        options = dataclasses.replace(options, cgroup_procs=cgroup.procs_file, oom_counter_file=cgroup.oom_counter_file)
    return FaultSetup(plan, transport, options, cgroup)
