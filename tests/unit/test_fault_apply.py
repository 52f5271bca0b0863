"""faults.apply: fault specs -> transport options, kernel options, cgroup and skip reason, per transport.

The transports here are stand-ins with the facts the plan reads (name, reattachable,
runs_on_this_host, orphan_timeout); nothing is started.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from pytest_hermes_kernel.faults import apply
from pytest_hermes_kernel.faults.apply import apply_faults, host_death_bound, plan_faults, transport_options
from pytest_hermes_kernel.faults.cgroup import MemoryCgroup
from pytest_hermes_kernel.faults.faulty_transport import FaultyTransport
from pytest_hermes_kernel.faults.proxy import ProxyRoute
from pytest_hermes_kernel.faults.spec import (hermes_host_sigkill, hermes_kernel_sigkill, hermes_oom,
                                              hermes_transport_drop)
from pytest_hermes_kernel.kernel.contract import Launched, LaunchSpec, Transport
from pytest_hermes_kernel.kernel.options import KernelOptions

MIB = 2**20


class _Stub(Transport):
    def launch(self, spec: LaunchSpec) -> Launched:
        raise AssertionError("the plan starts nothing")

    def kill(self, launched: Launched) -> bool:
        return True

    def alive(self, launched: Launched) -> bool:
        return False


class Local(_Stub):
    name: ClassVar[str] = "local"

    @property
    def runs_on_this_host(self) -> bool:
        return True


class Docker(_Stub):
    name: ClassVar[str] = "docker"
    reattachable: ClassVar[bool] = True


class Ssh(_Stub):
    name: ClassVar[str] = "ssh"
    reattachable: ClassVar[bool] = True


class FileCell(_Stub):
    name: ClassVar[str] = "filecell"

    def __init__(self) -> None:
        self.orphan_timeout = 1800.0  # an instance attribute, like the real transports'

    @property
    def runs_on_this_host(self) -> bool:
        return True


class RemoteExecOnly(_Stub):
    name: ClassVar[str] = "remote-exec"


# ------------------------------------------------------------------------------ transport options
def test_oom_on_a_container_transport_gets_a_memory_limit_and_its_own_container() -> None:
    for name in ("docker", "ssh"):
        options = transport_options([hermes_oom(256 * MIB)], name)
        assert options["mem_limit_bytes"] == 256 * MIB and options["container"] == "fresh"
    assert transport_options([hermes_oom(256 * MIB)], "local") == {}


def test_a_drop_on_ssh_puts_the_fault_proxy_on_its_connect_via_seam() -> None:
    options = transport_options([hermes_transport_drop("reset", after_cell=1)], "ssh")
    assert isinstance(options["connect_via"], ProxyRoute)
    assert transport_options([hermes_transport_drop("reset", after_cell=1)], "docker") == {}
    assert isinstance(transport_options([], "ssh", drops_on_demand=True)["connect_via"], ProxyRoute)
    assert transport_options([], "ssh") == {} and transport_options([hermes_kernel_sigkill(after_cell=1)], "ssh") == {}


# ------------------------------------------------------------------------------ skip reasons
def test_a_drop_skips_where_the_channel_is_not_reattachable() -> None:
    drop = [hermes_transport_drop("blackhole", during_cell=2)]
    for transport in (Local(), FileCell(), RemoteExecOnly()):
        plan = plan_faults(drop, transport, KernelOptions())
        assert plan.skip is not None and f"the {transport.name} transport" in plan.skip
        assert "not re-attachable" in plan.skip
    for transport in (Docker(), Ssh()):
        plan = plan_faults(drop, transport, KernelOptions())
        assert plan.skip is None and plan.wrap_streams and plan.firing == tuple(drop)


def test_oom_skips_where_the_kit_cannot_set_a_memory_limit() -> None:
    plan = plan_faults([hermes_oom(256 * MIB)], RemoteExecOnly(), KernelOptions())
    assert plan.skip is not None and "oom does not apply to the remote-exec transport" in plan.skip


def test_kernel_sigkill_applies_everywhere() -> None:
    for transport in (Local(), Docker(), Ssh(), FileCell(), RemoteExecOnly()):
        plan = plan_faults([hermes_kernel_sigkill(after_cell=1)], transport, KernelOptions())
        assert plan.skip is None and not plan.wrap_streams and not plan.in_harness


# ------------------------------------------------------------------------------ oom
def test_oom_on_this_host_runs_the_kernel_in_a_memory_cgroup_and_nowhere_else() -> None:
    assert plan_faults([hermes_oom(256 * MIB)], Local(), KernelOptions()).memory_limit_bytes == 256 * MIB
    assert plan_faults([hermes_oom(256 * MIB)], Docker(), KernelOptions()).memory_limit_bytes is None
    assert plan_faults([hermes_oom(256 * MIB)], Local(), KernelOptions()).firing == ()


def test_apply_puts_the_cgroup_into_the_kernel_options_and_close_removes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    removed: list[str] = []

    class FakeCgroup(MemoryCgroup):
        def remove(self) -> None:
            removed.append(self.path)

    monkeypatch.setattr(apply, "create_memory_cgroup", lambda limit: FakeCgroup("/cg/x", 2, limit))
    plan = plan_faults([hermes_oom(64 * MIB)], Local(), KernelOptions())
    setup = apply_faults(plan, Local(), KernelOptions(timeout=5.0))
    assert setup.options.cgroup_procs == "/cg/x/cgroup.procs" and setup.options.oom_counter_file == "/cg/x/memory.events"
    assert setup.options.timeout == 5.0 and setup.cgroup is not None and setup.cgroup.limit_bytes == 64 * MIB
    setup.close()
    setup.close()
    assert removed == ["/cg/x"]


# ------------------------------------------------------------------------------ host_sigkill
def test_host_sigkill_on_local_is_checked_within_the_lease_bound() -> None:
    plan = plan_faults([hermes_host_sigkill(during_cell=2)], Local(), KernelOptions())
    assert plan.skip is None and plan.in_harness and plan.death_bound == 2.0 and plan.orphan_timeout is None


def test_host_sigkill_gives_a_detached_runner_a_short_orphan_timer() -> None:
    """The README's example (no orphan_timeout of its own) runs on docker and ssh."""
    for transport in (Docker(), Ssh()):
        plan = plan_faults([hermes_host_sigkill(during_cell=2)], transport, KernelOptions())
        assert plan.skip is None and plan.in_harness
        assert plan.orphan_timeout == apply.HOST_SIGKILL_ORPHAN_TIMEOUT_S
        assert plan.death_bound == apply.HOST_SIGKILL_ORPHAN_TIMEOUT_S + apply.ORPHAN_DEATH_MARGIN_S
        setup = apply_faults(plan, transport, KernelOptions())
        assert setup.options.orphan_timeout == apply.HOST_SIGKILL_ORPHAN_TIMEOUT_S


def test_a_shorter_orphan_timer_of_the_test_is_kept_and_a_bound_of_the_marker_wins() -> None:
    plan = plan_faults([hermes_host_sigkill(after_cell=1)], Docker(), KernelOptions(orphan_timeout=3.0))
    assert plan.orphan_timeout is None and plan.death_bound == 3.0 + apply.ORPHAN_DEATH_MARGIN_S
    plan = plan_faults([hermes_host_sigkill(after_cell=1, bound=4.5)], Docker(), KernelOptions())
    assert plan.death_bound == 4.5


def test_host_sigkill_skips_where_the_transport_keeps_kernels_past_their_host_by_design() -> None:
    plan = plan_faults([hermes_host_sigkill(during_cell=2)], FileCell(), KernelOptions())
    assert plan.skip is not None and "orphan timer (1800 s)" in plan.skip and not plan.in_harness


def test_the_death_bound_reads_a_transport_level_orphan_timer_first() -> None:
    docker = Docker()
    assert host_death_bound(docker, 10.0) == 10.0 + apply.ORPHAN_DEATH_MARGIN_S
    docker.orphan_timeout = 2.0
    assert host_death_bound(docker, 10.0) == 2.0 + apply.ORPHAN_DEATH_MARGIN_S
    assert host_death_bound(Local(), 60.0) == apply.LEASE_DEATH_BOUND_S
    assert host_death_bound(RemoteExecOnly(), 7.0) == 7.0 + apply.ORPHAN_DEATH_MARGIN_S


# ------------------------------------------------------------------------------ drops
def test_apply_wraps_the_transport_for_drops_and_keeps_its_facts() -> None:
    route = ProxyRoute()
    ssh = Ssh()
    setup = apply_faults(plan_faults([hermes_transport_drop("reset", after_cell=1)], ssh, KernelOptions()), ssh,
                         KernelOptions(), link=route)
    assert isinstance(setup.transport, FaultyTransport)
    assert setup.transport.inner is ssh and setup.transport.link is route
    assert setup.transport.name == "ssh" and setup.transport.reattachable


def test_drops_on_demand_wrap_only_where_drops_apply() -> None:
    assert plan_faults([], Docker(), KernelOptions(), drops_on_demand=True).wrap_streams
    local = plan_faults([], Local(), KernelOptions(), drops_on_demand=True)
    assert not local.wrap_streams and local.skip is None
    assert apply_faults(local, Local(), KernelOptions()).transport.name == "local"


def test_during_cell_faults_start_the_kernel_reporting_its_cells_start() -> None:
    """A ``during_cell`` fault is timed from the cell's start in the worker: its kernel runs with
    ``report_running``; other faults leave the option (and its cost per cell) off."""
    for spec in (hermes_kernel_sigkill(during_cell=2), hermes_transport_drop("reset", during_cell=1),
                 hermes_host_sigkill(during_cell=2)):
        setup = apply_faults(plan_faults([spec], Docker(), KernelOptions()), Docker(), KernelOptions())
        assert setup.options.report_running, spec
    for specs in ([hermes_kernel_sigkill(after_cell=1)], [hermes_oom(256 * MIB)], []):
        setup = apply_faults(plan_faults(specs, Docker(), KernelOptions()), Docker(), KernelOptions())
        assert not setup.options.report_running, specs


def test_an_oom_skip_on_filecell_names_the_backend_whose_kernels_are_not_this_hosts() -> None:
    """A fresh user saw the contract's OOM case skip with ``oom does not apply to the filecell
    transport`` while their own ``hermes_oom`` test passed on the filecell leg (2026-12-07): the
    skip was the example backend's (a sandbox), the pass the local shell's. The skip names it."""
    from pytest_hermes_kernel.transports import make_transport
    from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend

    class Sandbox(LocalShellBackend):
        pass

    class Elsewhere:  # a backend of the user's own: execute() on some other machine
        def execute(self, cmd: str, timeout: float) -> tuple[int, str]:
            raise AssertionError("not called to plan a fault")

    here, there = make_transport("filecell", backend=Sandbox()), make_transport("filecell", backend=Elsewhere())
    try:
        assert plan_faults([hermes_oom(256 * MIB)], here, KernelOptions()).skip is None
        skip = plan_faults([hermes_oom(256 * MIB)], there, KernelOptions()).skip
        assert skip is not None and "filecell transport through Elsewhere, a backend whose kernels are not this host's" in skip
    finally:
        here.close()
        there.close()
