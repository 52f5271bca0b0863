"""Leak probes that look where the kernel runs, through its transport (issue #9 point 4).

Each case leaks on purpose and checks that the probe over live transports reports it and that
its cleanup ends it. The host process-table probe is left out of the checker, as if the engine
or the ssh host were another machine: the transport alone must see the leak.
"""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel import KernelHandle, KernelOptions
from pytest_hermes_kernel.errors import TransportLostError
from pytest_hermes_kernel.kernel.contract import Transport, note_activity
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.leaks.probes import PROBES
from pytest_hermes_kernel.leaks.probes import _transport_resources as probes_of_transports
from pytest_hermes_kernel.transports.detached import HOST_PROCESSES_SCRIPT, KERNEL_PROCESSES_SCRIPT
from pytest_hermes_kernel.transports.server_pool import probe_by_server
from pytest_hermes_kernel.transports.ssh.transport import SILENT_RETRY_S
from tests.support import wait_until

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
        assert container.id not in {c.id for c in client.containers.list(all=True, sparse=True)}
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


@pytest.mark.hermes_allow_leaks("the test leaks a kernel on purpose and cleans up through the probe")
@pytest.mark.parametrize("held", ["a dead connection", "no connection"])
def test_a_kernel_left_on_an_ssh_host_whose_connection_died_is_looked_for_and_never_passed_blind(
        hermes_transport: Transport, monkeypatch: pytest.MonkeyPatch, held: str) -> None:
    """Kernels made through a connection that died still run on the host. The transport then holds
    the dead connection, or none (a kernel operation that gave up on a silent host drops it):
    either way the probe connects again to look, and says so when the host does not answer
    (before: nothing was listed there, a silent pass)."""
    if hermes_transport.name != "ssh":
        pytest.skip("the ssh transport's connection")
    checker = LeakChecker(TRANSPORT_ONLY, grace=0.0)
    before = checker.before()
    handle = KernelHandle(hermes_transport, KernelOptions()).start()
    hermes_transport.current_connection.close()  # type: ignore[attr-defined]
    if held == "no connection":
        hermes_transport._conn = None  # type: ignore[attr-defined]  # as _connection() leaves it

    def silent_host(timeout: float | None = None) -> None:
        raise TransportLostError("timed out connecting to 127.0.0.1", timed_out=True)

    with monkeypatch.context() as patch:
        patch.setattr(hermes_transport, "_connect", silent_host)
        blind = checker.after(before)
    assert not blind and "TransportLostError: timed out connecting" in blind.unchecked.get(
        probes_of_transports.label(hermes_transport), "")

    # the host answers again: within SILENT_RETRY_S (a silent host gets one short try that often)
    # the probe connects again and sees the kernel; until then each check says it could not look
    reports = []
    wait_until(lambda: reports.append(checker.after(before)) or not reports[-1].unchecked, 3 * SILENT_RETRY_S,
               what="the leak probe to reach the ssh host again")
    assert all(r.unchecked for r in reports[:-1])  # never a clean pass meanwhile
    report = reports[-1]
    leaked = report.leaks.get("remote kernel process", {})
    assert leaked and all(handle.kernel_id in d for d in leaked.values()) and not report.unchecked, report.format("case")
    checker.cleanup(report)
    handle.shutdown()


def test_a_failed_scan_on_the_ssh_host_is_reported_not_read_as_no_kernel(hermes_transport: Transport,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if hermes_transport.name != "ssh":
        pytest.skip("the ssh transport's scan")
    hermes_transport._connection()  # type: ignore[attr-defined]
    checker = LeakChecker(TRANSPORT_ONLY, grace=0.0)
    before = checker.before()
    monkeypatch.setattr(hermes_transport, "servers", None)  # no kernel server: the scan is an exec
    monkeypatch.setattr(hermes_transport, "run_script", lambda conn, script, *args, **kw: (127, b""))
    note_activity()

    report = checker.after(before)

    label = probes_of_transports.label(hermes_transport)  # its describe(), numbered if another shares it
    assert not report and list(report.unchecked) == [label], report.unchecked
    assert "exit status 127" in report.unchecked[label]


def test_a_clean_test_leaves_nothing_the_transport_probe_reports(hermes_transport: Transport) -> None:
    transport = _remote(hermes_transport)
    checker = LeakChecker(TRANSPORT_ONLY, grace=2.0)
    before = checker.before()
    with KernelHandle(transport, KernelOptions()) as handle:
        assert handle.execute("6 * 7").value == "42"
    report = checker.after(before)
    assert not report, report.format("case")


def _scan_execs(transport: Transport, monkeypatch: pytest.MonkeyPatch, wanted: str = HOST_PROCESSES_SCRIPT) -> list[str]:
    """Record the scans of script ``wanted`` the transport runs by exec from now on."""
    execs: list[str] = []
    run_script = transport.run_script  # type: ignore[attr-defined]

    def recording(where, script, *args, **kw):
        if script.startswith(wanted):  # read_script adds its end line
            execs.append(str(where))
        return run_script(where, script, *args, **kw)

    monkeypatch.setattr(transport, "run_script", recording)
    return execs


@pytest.mark.hermes_allow_leaks("the test leaks a kernel on purpose and cleans up through the probe")
@pytest.mark.parametrize("scan_by", ["kernel server", "exec"])
def test_the_scan_runs_in_the_kernel_server_when_one_runs_and_finds_the_same(
        hermes_transport: Transport, monkeypatch: pytest.MonkeyPatch, scan_by: str) -> None:
    transport = _remote(hermes_transport)
    if transport.servers is None:  # type: ignore[attr-defined]
        pytest.skip("this transport was made without kernel servers")
    handle = KernelHandle(transport, KernelOptions()).start()  # its server runs from now on
    assert handle.launched.extra.get("server") is not None, "the kernel was forked by a server"
    execs = _scan_execs(transport, monkeypatch)
    if scan_by == "exec":
        monkeypatch.setattr(transport.servers, "running", lambda where: None)  # type: ignore[attr-defined]
    checker = LeakChecker(TRANSPORT_ONLY, grace=0.0)
    try:
        leaked = checker.after({}).leaks.get("remote kernel process", {})
        assert any(handle.kernel_id in d for d in leaked.values()), leaked
        assert bool(execs) == (scan_by == "exec"), execs
    finally:
        handle.shutdown()


def test_a_probe_in_the_kernel_server_gives_its_output_and_exit_code_and_a_hung_one_is_ended(
        hermes_transport: Transport) -> None:
    transport = _remote(hermes_transport)
    if transport.servers is None:  # type: ignore[attr-defined]
        pytest.skip("this transport was made without kernel servers")
    with KernelHandle(transport, KernelOptions()) as handle:
        server = handle.launched.extra["server"]
        assert server.probe("import sys; print(sys.argv[1:], 'é'); sys.exit(3)", ["a", "b c"]) == \
            (3, "['a', 'b c'] é\n".encode())
        assert server.probe("raise ValueError('no')", []) == (1, b"")
        code, _ = server.probe("import time; time.sleep(60)", [], alarm_s=1)
        assert code == -14, "SIGALRM ended the hung probe"
        assert server.usable and handle.execute("1 + 1").value == "2", "the server and its kernels go on"
        where = next(w for (w, _), s in transport.servers._servers.items() if s is server)  # type: ignore[attr-defined]
        assert probe_by_server(transport.servers, where, "print('partial'); raise SystemExit(2)", []) is None, \
            "a failed probe's output must send the caller to its exec, never read as the answer"


@pytest.mark.parametrize("scan_by", ["kernel server", "exec"])
def test_a_kernels_process_list_comes_from_the_kernel_server_when_one_runs(
        hermes_transport: Transport, monkeypatch: pytest.MonkeyPatch, scan_by: str) -> None:
    """``kernel_processes`` (the contract's "nothing of the kernel is left" check, polled) asks the
    host's kernel server, as the leak snapshot does: no ``docker exec`` or ssh exec of a fresh
    python3 per poll (207 docker execs in one suite run). Both ways list the same processes."""
    transport = _remote(hermes_transport)
    if transport.servers is None:  # type: ignore[attr-defined]
        pytest.skip("this transport was made without kernel servers")
    handle = KernelHandle(transport, KernelOptions()).start()
    locator = transport.locator(handle.launched)
    execs = _scan_execs(transport, monkeypatch, KERNEL_PROCESSES_SCRIPT)
    if scan_by == "exec":
        monkeypatch.setattr(transport.servers, "running", lambda where: None)  # type: ignore[attr-defined]
    try:
        listed = transport.kernel_processes(handle.kernel_id, locator)
        assert len(listed) >= 2, listed  # the kernel's supervisor and worker
        assert bool(execs) == (scan_by == "exec"), execs
    finally:
        handle.shutdown()
    wait_until(lambda: transport.kernel_processes(handle.kernel_id, locator) == [], 5.0,
               what="the shut-down kernel's processes to be listed as gone")


@pytest.mark.hermes_allow_leaks("the test leaks a kernel on purpose and ends it itself")
def test_a_spawn_path_docker_transport_scans_through_another_transports_kernel_server(
        hermes_transport: Transport, monkeypatch: pytest.MonkeyPatch) -> None:
    """A docker transport made without kernel servers (the spawn path) borrows a server that
    another transport of the process runs in the same container for its scans, and finds its
    own leaked kernel there: no exec of a fresh python3 per leak snapshot."""
    transport = _remote(hermes_transport)
    if transport.name != "docker" or transport.servers is None:  # type: ignore[attr-defined]
        pytest.skip("docker container ids name one kernel host for every transport of the process")
    from pytest_hermes_kernel.transports import make_transport

    with KernelHandle(transport, KernelOptions()):  # the server-path transport's server runs from now on
        spawner = make_transport("docker", server=False)
        try:
            leaked = KernelHandle(spawner, KernelOptions()).start()
            assert leaked.launched.extra.get("server") is None, "started by a plain spawn"
            execs = _scan_execs(spawner, monkeypatch)
            found = spawner.leak_snapshot(os.getpid())["remote kernel process"]
            assert any(leaked.kernel_id in d for d in found.values()), found
            assert execs == [], "the scan ran in the other transport's kernel server"
            leaked.shutdown()
        finally:
            spawner.close()


@pytest.mark.hermes_transports("docker")
def test_a_container_removed_while_its_scan_runs_is_no_blind_spot(hermes_transport: Transport,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The container a transport knows is removed between the probe's look at its state and the
    scan's exec (another member of the shared container left it last): the snapshot reports
    nothing there, not a part it could not look at (seen in a ``-n 2`` run as a leak check error:
    ``exec ... is not running: Removal In Progress``)."""
    from tests.support import transport_of_its_own

    with transport_of_its_own("docker", server=False) as transport:
        handle = KernelHandle(transport, KernelOptions()).start()
        cid = handle.launched.extra["container"]
        run_script, removed = transport.run_script, []  # type: ignore[attr-defined]

        def removed_first(container_id: str, *args: object, **kwargs: object) -> object:
            if container_id == cid and not removed:
                removed.append(cid)
                transport.api.remove_container(cid, force=True)  # type: ignore[attr-defined]
            return run_script(container_id, *args, **kwargs)

        monkeypatch.setattr(transport, "run_script", removed_first)
        found = transport.leak_snapshot(os.getpid())

        assert removed == [cid], "the scan's exec was not reached"
        assert not any(cid in identity for kind in found.values() for identity in kind), found
        handle.shutdown()
