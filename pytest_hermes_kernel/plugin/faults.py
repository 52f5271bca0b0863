"""Fault markers and the ``hermes_faults`` fixture.

Markers (signatures in :mod:`pytest_hermes_kernel.faults.spec`)::

    @pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.5, bound=None)
    @pytest.mark.hermes_kernel_sigkill(after_cell=1)
    @pytest.mark.hermes_oom(limit_bytes=256 * 2**20)
    @pytest.mark.hermes_transport_drop("reset" | "blackhole" | "latency", after_cell=1, duration=None)

The ``hermes_kernel`` fixtures apply them through :mod:`pytest_hermes_kernel.faults.apply` (the
path catalog scenarios take too): under ``hermes_host_sigkill`` the kernel's host is a separate
process (the host harness) that the fixture drives with the same API, and a detached runner
(docker, ssh) gets a short orphan timer; after the test, the plugin checks that every process
of the kernel is gone within the bound and fails the test with what survived. ``hermes_oom``
runs the kernel under a real memory limit (a memory cgroup for local, the container's limit for
docker and ssh); ``hermes_transport_drop`` runs it on a
:class:`~pytest_hermes_kernel.faults.faulty_transport.FaultyTransport`. A fault that cannot
apply on the test's transport skips the test with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import ConfigError, TransportUnavailableError
from ..faults.spec import MARKERS, DropMode, FaultSpec, marker_help
from .settings import transport_defaults

if TYPE_CHECKING:  # the rest of the faults package is imported by the fixtures that use it
    from ..faults.apply import FaultSetup
    from ..faults.cgroup import MemoryCgroup
    from ..faults.harness import HarnessKernel
    from ..faults.proxy import ProxyRoute
    from ..kernel.contract import Transport
    from ..kernel.interface import Kernel
    from ..kernel.options import KernelOptions

_setups_key = pytest.StashKey["list[FaultSetup]"]()
_link_key = pytest.StashKey["ProxyRoute"]()
_own_options_key = pytest.StashKey["dict[str, Any]"]()


def fault_specs(node: pytest.Item) -> list[FaultSpec]:
    """Parse every fault marker on ``node``.

    :raises pytest.fail.Exception: naming the test and the marker when an argument is bad.
    """
    specs = []
    for name, parse in MARKERS.items():
        for mark in node.iter_markers(name):
            try:
                specs.append(parse(*mark.args, **mark.kwargs))
            except (TypeError, ConfigError) as exc:
                pytest.fail(f"{node.nodeid}: bad @pytest.mark.{name}(...): {exc}", pytrace=False)
    return specs


def _drops_on_demand(request: pytest.FixtureRequest) -> bool:
    """Whether the test may drop a kernel's link itself (it uses ``hermes_faults``)."""
    return "hermes_faults" in request.fixturenames


def transport_options_for_faults(request: pytest.FixtureRequest, transport_name: str) -> dict[str, Any]:
    """Constructor options the test's faults need of its transport (see
    :func:`~pytest_hermes_kernel.faults.apply.transport_options`); the fault proxy route, if
    any, is kept for :func:`make_kernel`."""
    from ..faults.apply import transport_options
    from ..faults.proxy import ProxyRoute

    options = transport_options(fault_specs(request.node), transport_name, drops_on_demand=_drops_on_demand(request))
    link = options.get("connect_via")
    if isinstance(link, ProxyRoute):
        request.node.stash[_link_key] = link
    return options


def note_transport_options(node: pytest.Item, options: dict[str, Any]) -> None:
    """The constructor options ``node``'s transport was made with beyond the run's defaults (its
    faults' and its ``hermes_kernel`` marker's): a host-harness kernel cannot take them (see
    :func:`make_kernel`)."""
    node.stash[_own_options_key] = dict(options)


def _harness_cannot_honour(node: pytest.Item, specs: list[FaultSpec], transport: Transport) -> str | None:
    """Why the host harness cannot run ``node``'s kernel as its other faults and options ask, or ``None``.

    The harness host makes its own transport of the same name with the run's defaults: a memory
    limit or a fresh container of the test's transport never reached it (the kernel ran without
    them: a hog meant to be OOM-killed took the machine's memory), nor did a drop (the stream is
    the harness host's)."""
    own = {k: v for k, v in node.stash.get(_own_options_key, {}).items() if k != "connect_via"}
    lacks = []
    if own:
        source = "hermes_oom's memory limit" if any(s.kind == "oom" for s in specs) else "the hermes_kernel marker"
        lacks.append(f"this test's transport options ({', '.join(f'{k}={v!r}' for k, v in own.items())}: {source})")
    if any(s.kind == "transport_drop" for s in specs):
        lacks.append("hermes_transport_drop (the kernel's stream is in the harness host, out of the drop's reach)")
    if not lacks:
        return None
    return (f"host_sigkill on {transport.name}: the kernel runs in the host harness, a process of its own with the "
            f"run's shared {transport.name} transport, which cannot take {' nor '.join(lacks)}; the "
            "test would run without it: this leg is skipped")


def make_kernel(request: pytest.FixtureRequest, transport: Transport, opts: KernelOptions,
                tools: dict[str, Any]) -> Kernel:
    """A started kernel for the ``hermes_kernel`` fixtures, with the test's faults applied.

    :raises pytest.skip.Exception: with the reason when a fault cannot apply on this transport.
    :raises pytest.fail.Exception: if the test gives tools to a host-harness kernel.
    """
    from ..faults.apply import apply_faults, plan_faults
    from ..faults.injector import FaultingKernel
    from ..kernel.handle import KernelHandle

    specs = fault_specs(request.node)
    plan = plan_faults(specs, transport, opts, drops_on_demand=_drops_on_demand(request))
    if plan.skip is not None:
        pytest.skip(plan.skip)
    if plan.in_harness and (why := _harness_cannot_honour(request.node, specs, transport)) is not None:
        pytest.skip(why)
    if plan.in_harness and tools:  # given to the factory (a marker's were refused at setup)
        from .markers import TOOLS_IN_HARNESS

        pytest.fail(f"{request.node.nodeid}: hermes_kernel_factory(tools=...): {TOOLS_IN_HARNESS}", pytrace=False)
    try:
        setup = apply_faults(plan, transport, opts, link=request.node.stash.get(_link_key, None))
    except TransportUnavailableError as exc:
        pytest.skip(f"oom on the {transport.name} transport needs a memory cgroup: {exc}")
    request.node.stash.setdefault(_setups_key, []).append(setup)
    kernel: Kernel
    if plan.in_harness:
        kernel = _harness_kernel(request, transport, setup.options)
    else:
        kernel = KernelHandle(setup.transport, setup.options, tools=tools, owner=request.node.nodeid).start()
        _check_in_cgroup(kernel, setup)
    return FaultingKernel(kernel, specs, death_bound=plan.death_bound) if plan.firing else kernel


def _harness_kernel(request: pytest.FixtureRequest, transport: Transport, options: KernelOptions) -> Kernel:
    """A kernel whose host is the host harness, with the run's defaults of the shared transport.

    :raises pytest.fail.Exception: with the message alone when the harness cannot make this
        transport (a factory it cannot be handed: the message sat under 60 lines of traceback).
    """
    from ..faults.harness import HarnessKernel

    try:
        leg = _leg(request, transport)
        return HarnessKernel(leg, options, transport_options=transport_defaults(request.config, leg), shares_run_host=True)
    except ConfigError as exc:
        problem = str(exc)
    pytest.fail(f"{request.node.nodeid}: {problem}", pytrace=False)  # outside `except`: no chained traceback


def _leg(request: pytest.FixtureRequest, transport: Transport) -> str:
    """The name the test's transport was made by: its ``--hermes-transport`` leg, else its own name.

    Not ``transport.name`` alone: that is its class's (``filecell``), and a transport registered
    under a name of its own (``register_transport("filecell-short", partial(FileCellTransport,
    orphan_timeout=3, ...))``) had its host harness make the built-in one, with its 1800-s idle
    timer and 620 s attached after the host, while the death bound counted the registered 3 + 2 s.
    """
    leg = getattr(getattr(request.node, "callspec", None), "params", {}).get("hermes_transport")
    return leg if isinstance(leg, str) and leg != "<none>" else transport.name


#: Seconds a started kernel's worker may take to join ``hermes_oom``'s memory cgroup.
CGROUP_JOIN_S = 5.0


def _check_in_cgroup(kernel: Any, setup: FaultSetup) -> None:
    """``hermes_oom`` on a transport of this host: the kernel's worker must be in the memory cgroup
    once started. A transport that did not hand ``LaunchSpec.config`` (its ``cgroup_procs``) to the
    runner ran the kernel without the limit: the test's hog ran to its cell timeout (60 s) and failed
    as ``timeout``, and a test that allocated less passed, both with no word of the limit."""
    import time

    cg = setup.cgroup
    deadline = time.monotonic() + CGROUP_JOIN_S  # the worker joins as it starts, which its hello does not wait for
    while cg is not None and kernel.pid is not None and cg.holds(kernel.pid) is False:
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    else:
        return
    kernel.shutdown()
    pytest.fail(f"{setup.transport!r}: hermes_oom's kernel runs without its memory limit: its worker (pid "
                f"{kernel.pid}) is not in the memory cgroup {cg.path} {CGROUP_JOIN_S:g} s after its start (the transport must hand "
                f"the LaunchSpec's config to the runner whole: its cgroup_procs names the cgroup the worker "
                f"joins)", pytrace=False)


def finish_kernel(kernel: Kernel, node: pytest.Item) -> list[str]:
    """After the test ``node``: end its faults; return what is wrong (a kernel that outlived its
    host; a fault the test never met, for a test whose call passed)."""
    from ..faults.injector import FaultingKernel
    from .report import phase_report_key

    call = node.stash.get(phase_report_key, {}).get("call")
    return kernel.finish(unmet=call is not None and call.passed) if isinstance(kernel, FaultingKernel) else []


def never_applied(node: pytest.Item, reports: dict[str, pytest.TestReport]) -> list[str]:
    """The fault markers of a test that passed without starting a kernel (it takes
    ``hermes_kernel_factory`` but never called it): each one never applied, and the test was green
    without it. Nothing for a test that failed or skipped first (``reports``: its phase reports)."""
    call = reports.get("call")
    if call is None or not call.passed:
        return []
    names = [name for name in MARKERS if any(True for _ in node.iter_markers(name))]
    return [f"@pytest.mark.{name} never applied: the test started no kernel with hermes_kernel_factory, so it passed "
            "without its fault. Hint: start one (hermes_kernel_factory()) or use the hermes_kernel fixture"
            for name in names]


def close_fault_setups(node: pytest.Item) -> None:
    """Remove what the test's faults made (memory cgroups), once its kernels are gone."""
    for setup in node.stash.get(_setups_key, []):
        setup.close()


@pytest.fixture
def hermes_faults(request: pytest.FixtureRequest) -> Iterator[HermesFaults]:
    """The same faults as the markers, fired when the test says so."""
    faults = HermesFaults(request.config)
    yield faults
    faults.close()


class HermesFaults:
    """Imperative fault injection (the ``hermes_faults`` fixture).

    The kernels of a test that uses it run on a
    :class:`~pytest_hermes_kernel.faults.faulty_transport.FaultyTransport` where drops apply
    (docker, ssh through the fault proxy), so :meth:`transport_drop` needs no marker.
    """

    def __init__(self, config: pytest.Config | None = None) -> None:
        self._config = config  # the run's settings (--hermes-image, ssh targets, ...) for harness()
        self._harnesses: list[HarnessKernel] = []
        self._cgroups: list[MemoryCgroup] = []

    def kernel_sigkill(self, kernel: Kernel) -> None:
        """SIGKILL the kernel's worker from outside; returns once it is seen dead.

        :raises ConfigError: if the kernel has no worker, or it had ended already (nothing to kill).
        """
        from ..faults import injector

        injector.kernel_sigkill(kernel)

    def transport_drop(self, kernel: Kernel, mode: DropMode = "reset", duration: float | None = None,
                       latency: float = 0.2) -> None:
        """Break a docker/ssh kernel's channel (see :func:`~pytest_hermes_kernel.faults.injector.transport_drop`).

        :raises ConfigError: if its transport cannot re-attach (local, filecell) or an argument is refused.
        """
        from ..faults import injector

        injector.transport_drop(kernel, mode, duration, latency)

    def harness(self, transport: str = "local", **options: Any) -> HarnessKernel:
        """A kernel whose host is a separate process; ``.kill_host()`` SIGKILLs the host.

        Its transport has the run's settings, as the kernel fixtures' has (``--hermes-image``,
        ``--hermes-ssh-targets``, ...: the harness ran in the default image, on an sshd container
        of its own, whatever the run said)."""
        from ..faults.harness import HarnessKernel
        from ..transports import get_transport

        if not isinstance(transport, str):  # (the test's hermes_transport: its host could not take it)
            raise ConfigError(f"hermes_faults.harness() takes a transport name, not {transport!r}: the kernel runs "
                              "in a separate host process, which makes its own transport of that name with the "
                              f"run's settings. Hint: hermes_faults.harness({getattr(transport, 'name', 'local')!r})")
        defaults = transport_defaults(self._config, transport) if self._config is not None else {}
        if defaults:  # this process's shared transport of that name, as the harness host's
            try:
                get_transport(transport, **defaults)
            except TransportUnavailableError as exc:
                pytest.skip(str(exc))
        kernel = HarnessKernel(transport, options, transport_options=defaults, shares_run_host=True)
        self._harnesses.append(kernel)
        return kernel

    def host_sigkill(self, kernel: HarnessKernel, bound: float = 2.0) -> list[str]:
        """SIGKILL the harness host now; return what of the kernel survived ``bound`` seconds.

        :raises ConfigError: if ``kernel`` is no :meth:`harness` kernel (its host is this process).
        """
        from ..faults import injector

        injector.host_sigkill(kernel)
        return [injector.named_survivor(line, kernel) for line in kernel.wait_kernel_gone(bound)]

    def memory_cgroup(self, limit_bytes: int) -> MemoryCgroup:
        """A memory cgroup for a local kernel: start it with ``cgroup_procs=cg.procs_file,
        oom_counter_file=cg.oom_counter_file`` (kernel options; skips where no cgroup can be made)."""
        from ..faults.cgroup import create_memory_cgroup

        try:
            cg = create_memory_cgroup(limit_bytes)
        except TransportUnavailableError as exc:
            pytest.skip(str(exc))
        self._cgroups.append(cg)
        return cg

    def close(self) -> None:
        """Shut the harness kernels down and remove the memory cgroups (the fixture does, after the test)."""
        for kernel in self._harnesses:
            kernel.shutdown()
        for cg in self._cgroups:
            cg.remove()


def pytest_configure(config: pytest.Config) -> None:
    for line in marker_help():
        config.addinivalue_line("markers", line)
