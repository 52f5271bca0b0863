"""Fault markers and the ``hermes_faults`` fixture.

Markers (signatures in :mod:`pytest_hermes_kernel.faults.spec`)::

    @pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.5, bound=None)
    @pytest.mark.hermes_kernel_sigkill(after_cell=1)
    @pytest.mark.hermes_oom(limit_bytes=256 * 2**20)
    @pytest.mark.hermes_transport_drop("reset" | "blackhole" | "latency", after_cell=1, duration=None)

The ``hermes_kernel`` fixtures apply them: under ``hermes_host_sigkill`` the kernel's host is a
separate process (the host harness) that the fixture drives with the same API; after the
test, the plugin checks that every process of the kernel is gone within the transport's bound
and fails the test with what survived. ``hermes_oom`` runs the kernel under a real memory limit
(a memory cgroup for local, the container's limit for docker and ssh).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ..errors import ConfigError, TransportUnavailableError
from ..faults import injector
from ..faults.cgroup import MemoryCgroup, create_memory_cgroup
from ..faults.harness import HarnessKernel
from ..faults.injector import FaultingKernel
from ..faults.spec import MARKERS, FaultSpec, marker_help
from ..kernel.handle import KernelHandle, KernelOptions
from ..kernel.contract import Transport

_cgroups_key = pytest.StashKey[list[MemoryCgroup]]()


def fault_specs(node: pytest.Item) -> list[FaultSpec]:
    """Parse every fault marker on ``node``.

    :raises pytest.UsageError: naming the test and the marker when an argument is bad.
    """
    specs = []
    for name, parse in MARKERS.items():
        for mark in node.iter_markers(name):
            try:
                specs.append(parse(*mark.args, **mark.kwargs))
            except (TypeError, ConfigError) as exc:
                pytest.fail(f"{node.nodeid}: bad @pytest.mark.{name}(...): {exc}", pytrace=False)
    return specs


def host_death_bound(transport: Transport, options: KernelOptions) -> float:
    """Seconds within which a kernel must be gone after its host died: local 2 s (EOF on the
    lease is immediate); stream transports: the runner's orphan timer plus 3 s."""
    if transport.reattachable:
        return float(getattr(transport, "orphan_timeout", None) or options.orphan_timeout) + 3.0
    if transport.name == "local":
        return 2.0
    return float(getattr(transport, "orphan_timeout", None) or options.orphan_timeout) + 3.0


def transport_options_for_faults(node: pytest.Item, transport_name: str) -> dict[str, Any]:
    """Transport options a fault needs: a container with a memory limit for ``hermes_oom``; for
    ``hermes_transport_drop`` on ssh, the loopback TCP fault proxy in front of sshd."""
    options: dict[str, Any] = {}
    for spec in fault_specs(node):
        if spec.kind == "oom" and transport_name in ("docker", "ssh"):
            options.update(mem_limit_bytes=spec.limit_bytes, container="fresh")
        if spec.kind == "transport_drop" and transport_name == "ssh":
            from ..faults.proxy import ProxyRoute

            options["connect_via"] = ProxyRoute()  # drops cut the TCP connection in front of sshd
    return options


def make_kernel(request: pytest.FixtureRequest, transport: Transport, opts: KernelOptions,
                tools: dict[str, Any]) -> Any:
    """A started kernel for the ``hermes_kernel`` fixtures, with the test's faults applied."""
    specs = fault_specs(request.node)
    for spec in specs:
        if spec.kind == "oom" and transport.runs_on_this_host:
            try:
                cg = create_memory_cgroup(spec.limit_bytes or 0)
            except TransportUnavailableError as exc:
                pytest.skip(f"hermes_oom on local needs a memory cgroup: {exc}")
            request.node.stash.setdefault(_cgroups_key, []).append(cg)
            opts = _replace(opts, cgroup_procs=cg.procs_file, oom_counter_file=cg.oom_counter_file)
        if spec.kind == "transport_drop" and not transport.reattachable:
            pytest.skip(f"hermes_transport_drop does not apply to the {transport.name} transport: its channel "
                        "is not re-attachable (for local a drop is a host death: use hermes_host_sigkill)")
    if any(s.kind == "host_sigkill" for s in specs):
        bound = host_death_bound(transport, opts)
        if bound > 60:
            pytest.skip(f"hermes_host_sigkill on {transport.name}: its kernels outlive their host until their idle "
                        f"timer ({bound - 3:g} s) by design, since nothing is attached between cells; "
                        "give the transport a short orphan_timeout to test host death")
        if tools:
            raise pytest.UsageError(f"{request.node.nodeid}: tools cannot cross into the host harness process")
        fields = {f: getattr(opts, f) for f in ("timeout", "max_output_bytes", "auto_restart", "orphan_timeout",
                                                "keepalive_interval", "keepalive_missed", "env")}
        kernel: Any = HarnessKernel(transport.name, fields)
        kernel.death_bound = bound
    else:
        kernel = KernelHandle(transport, opts, tools=tools, owner=request.node.nodeid).start()
    return FaultingKernel(kernel, specs) if any(s.kind != "oom" for s in specs) else kernel


def _replace(opts: KernelOptions, **changes: Any) -> KernelOptions:
    from dataclasses import replace

    return replace(opts, **changes)


def finish_kernel(request: pytest.FixtureRequest, kernel: Any) -> list[str]:
    """After the test: fire pending faults, check host-death bounds; return what survived."""
    problems: list[str] = []
    if isinstance(kernel, FaultingKernel):
        kernel.finish()
        inner = kernel.handle
        if any(f.spec.kind == "host_sigkill" for f in kernel.fired):
            bound = next((f.spec.bound for f in kernel.fired if f.spec.bound), None) or inner.death_bound
            survivors = inner.wait_kernel_gone(bound)
            if survivors:
                problems.append(f"kernel {inner.kernel_id} outlived its SIGKILLed host by more than {bound:g} s; "
                                "still alive:\n  " + "\n  ".join(survivors))
                _kill_survivors(inner)
    return problems


def _kill_survivors(kernel: HarnessKernel) -> None:
    import signal

    from ..transports import get_transport

    transport = get_transport(kernel.transport_name)
    for line in transport.kernel_processes(kernel.kernel_id, kernel.facts.get("locator")):
        try:
            transport.signal_pid(None, int(line.split(":", 1)[0]), signal.SIGKILL)  # type: ignore[arg-type]
        except (OSError, ValueError):
            pass


@pytest.fixture
def hermes_faults(request: pytest.FixtureRequest) -> Iterator[HermesFaults]:
    """The same faults as the markers, fired when the test says so."""
    faults = HermesFaults()
    yield faults
    faults.close()


class HermesFaults:
    """Imperative fault injection (the ``hermes_faults`` fixture)."""

    def __init__(self) -> None:
        self._harnesses: list[HarnessKernel] = []
        self._cgroups: list[MemoryCgroup] = []

    def kernel_sigkill(self, kernel: Any) -> None:
        """SIGKILL the kernel's worker from outside."""
        injector.kernel_sigkill(kernel)

    def transport_drop(self, kernel: Any, mode: str = "reset", duration: float | None = None,
                       latency: float = 0.2) -> None:
        """Break a docker/ssh kernel's channel (see :class:`~pytest_hermes_kernel.faults.injector.FaultyStream`)."""
        injector.transport_drop(kernel, mode, duration, latency)

    def harness(self, transport: str = "local", **options: Any) -> HarnessKernel:
        """A kernel whose host is a separate process; ``.kill_host()`` SIGKILLs the host."""
        kernel = HarnessKernel(transport, options)
        self._harnesses.append(kernel)
        return kernel

    def host_sigkill(self, kernel: HarnessKernel, bound: float = 2.0) -> list[str]:
        """SIGKILL the harness host now; return what of the kernel survived ``bound`` seconds."""
        kernel.kill_host()
        return kernel.wait_kernel_gone(bound)

    def memory_cgroup(self, limit_bytes: int) -> MemoryCgroup:
        """A memory cgroup for a local kernel: pass ``cgroup_procs``/``oom_counter_file`` from it."""
        try:
            cg = create_memory_cgroup(limit_bytes)
        except TransportUnavailableError as exc:
            pytest.skip(str(exc))
        self._cgroups.append(cg)
        return cg

    def close(self) -> None:
        for kernel in self._harnesses:
            kernel.shutdown()
        for cg in self._cgroups:
            cg.remove()


def remove_cgroups(node: pytest.Item) -> None:
    for cg in node.stash.get(_cgroups_key, []):
        cg.remove()


def pytest_configure(config: pytest.Config) -> None:
    for line in marker_help():
        config.addinivalue_line("markers", line)
