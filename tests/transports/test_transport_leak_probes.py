"""Leak probes that look where the kernel runs, through its transport (issue #9 point 4).

Each case leaks on purpose and checks that the probe over live transports reports it and that
its cleanup ends it. The host process-table probe is left out of the checker, as if the engine
or the ssh host were another machine: the transport alone must see the leak.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelHandle, KernelOptions
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.leaks.probes import PROBES

TRANSPORT_ONLY = [p for p in PROBES if p.kind == "transport resource"]


def _remote(transport: Transport) -> Transport:
    if transport.name not in ("docker", "ssh"):
        pytest.skip(f"{transport.name} kernels run in this machine's process table (the host probes see them)")
    return transport


@pytest.mark.hermes_allow_leaks("the test leaks on purpose and cleans up through the probe")
def test_a_kernel_left_running_is_found_through_its_transport_and_ended(hermes_transport: Transport) -> None:
    transport = _remote(hermes_transport)
    checker = LeakChecker(TRANSPORT_ONLY, grace=0.0)
    before = checker.before()
    handle = KernelHandle(transport, KernelOptions()).start()
    locator = transport.locator(handle.launched)
    report = checker.after(before)
    leaked = report.leaks.get("remote kernel process", {})
    assert leaked and all(handle.kernel_id in d for d in leaked.values()), report.format("case")
    checker.cleanup(report)
    assert transport.kernel_processes(handle.kernel_id, locator) == [], "the probe's cleanup left the kernel"
    handle.shutdown()


@pytest.mark.hermes_allow_leaks("the test leaks a container on purpose and cleans up through the probe")
def test_a_labelled_container_nobody_holds_is_reported_and_removed(hermes_transport: Transport) -> None:
    transport = _remote(hermes_transport)
    from pytest_hermes_kernel.containers.lifecycle import start_kernel_host
    from pytest_hermes_kernel.containers.sharing import worker_id

    checker = LeakChecker(TRANSPORT_ONLY, grace=0.0)
    if transport.name == "ssh":
        transport._connection()  # the sshd container is up, held by this run
    before = checker.before()
    image = transport.image if transport.name == "docker" else transport.sshd.image  # type: ignore[attr-defined]
    # carries this run's labels, as the kit's own containers do, but nobody holds it
    container = start_kernel_host(image=image, run_id=transport.run_id, worker_id=worker_id())  # type: ignore[attr-defined]
    try:
        report = checker.after(before)
        assert set(report.leaks.get("container", {})) == {f"container|{container.id}"}, report.format("case")
        checker.cleanup(report)
        client = transport.client if transport.name == "docker" else transport.sshd.docker  # type: ignore[attr-defined]
        assert container.id not in {c.id for c in client.containers.list(all=True)}
    finally:
        from pytest_hermes_kernel.containers.lifecycle import remove_container

        remove_container(container.id)


@pytest.mark.hermes_allow_leaks("the test leaves a kernel dir on purpose and cleans up through the probe")
def test_a_kernel_dir_left_where_the_kernel_ran_is_reported_and_removed(hermes_transport: Transport,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    transport = _remote(hermes_transport)
    checker = LeakChecker(TRANSPORT_ONLY, grace=0.0)
    before = checker.before()
    handle = KernelHandle(transport, KernelOptions()).start()
    kdir = handle.launched.kernel_dir
    assert kdir
    with monkeypatch.context() as patch:
        patch.setattr(transport, "cleanup", lambda launched: None)  # as if the dir's removal failed
        assert transport.kill(handle.launched)  # SIGKILL: the runner cannot remove its dir either
        handle.shutdown()
    report = checker.after(before)
    leaked = report.leaks.get("remote kernel dir", {})
    assert len(leaked) == 1 and kdir in next(iter(leaked.values())), report.format("case")
    assert not report.leaks.get("remote kernel process"), "the kernel itself ended: only its dir is left"
    checker.cleanup(report)
    assert not checker.after(before), "the probe's cleanup left the kernel dir"


@pytest.mark.hermes_allow_leaks("the test leaves an ssh channel open on purpose and cleans up through the probe")
def test_an_ssh_channel_left_open_is_reported_and_closed(hermes_transport: Transport) -> None:
    if hermes_transport.name != "ssh":
        pytest.skip("ssh channels exist on the ssh transport only")
    conn = hermes_transport._connection()
    checker = LeakChecker(TRANSPORT_ONLY, grace=0.0)
    before = checker.before()
    chan = conn.open_exec("sleep 60")
    report = checker.after(before)
    channels = report.leaks.get("ssh channel", {})
    assert any("sleep 60" in d for d in channels.values()), report.format("case")
    checker.cleanup(report)
    assert chan.closed


def test_a_clean_test_leaves_nothing_the_transport_probe_reports(hermes_transport: Transport) -> None:
    transport = _remote(hermes_transport)
    checker = LeakChecker(TRANSPORT_ONLY, grace=2.0)
    before = checker.before()
    with KernelHandle(transport, KernelOptions()) as handle:
        assert handle.execute("6 * 7").value == "42"
    report = checker.after(before)
    assert not report, report.format("case")
