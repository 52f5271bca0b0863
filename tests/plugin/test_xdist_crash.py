"""Handed case B41: under pytest-xdist a crashed worker's kernels were never torn down, the crash
was blamed on the wrong test, and ``--maxfail`` tore session fixtures down twice or wedged.

``pytest -n 2``: test_a holds a kernel (filecell, whose runner would otherwise live for its
30 min idle timer, and docker, whose runner would live for its orphan timer) and calls
``os._exit(1)``; test_b fails normally; test_c's fixture teardown kills its worker while its
kernel lives. The crashes are blamed on test_a and test_c by node id, the controller reaps the
dead workers' kernels at once and, at the end, the run's container that only a crashed worker
held, and the run ends with its summary. With ``--maxfail=1`` the run
stops at the first failure, with a summary, and without an internal error or a hang.
"""

from __future__ import annotations

import glob
import json
import os
import re
import uuid

import pytest

from pytest_hermes_kernel.containers.rundir import run_dir_path
from pytest_hermes_kernel.procs import processes_with_env
from pytest_hermes_kernel.transports.filecell.transport import DEFAULT_ROOT
from tests.support import wait_until

pytest.importorskip("xdist")

INNER = """
import json, os, pathlib
import pytest

HERE = pathlib.Path(__file__).parent


def note(name, kernel):
    (HERE / name).write_text(json.dumps({"pid": os.getpid(), "kernel": kernel.kernel_id}))


@pytest.mark.hermes_transports("filecell", "docker")
def test_a(hermes_kernel, hermes_transport):
    assert hermes_kernel.execute("1 + 1").value == "2"
    note(f"a-{hermes_transport.name}.json", hermes_kernel)
    os._exit(1)


def test_b():
    assert False, "an ordinary failure"


@pytest.fixture
def dies_in_teardown(hermes_kernel):
    yield hermes_kernel
    note("c-filecell.json", hermes_kernel)
    os._exit(1)


@pytest.mark.hermes_transports("filecell")
def test_c(dies_in_teardown):
    assert dies_in_teardown.execute("2 + 2").value == "4"
"""


def _kernel_dirs(kernel_id: str) -> list[str]:
    """The local filecell kernel dirs of ``kernel_id`` (``k-<first 12>-<random>``)."""
    return glob.glob(os.path.join(DEFAULT_ROOT, f"k-{kernel_id[:12]}-*"))


def _reaped(output: str, nodeid: str) -> int:
    found = re.search(rf"hermes-kernel: worker gw\d+ crashed in {re.escape(nodeid)}; (\d+) of its kernel", output)
    assert found, f"no crash line for {nodeid}:\n{output[-3000:]}"
    return int(found.group(1))


def test_crashed_workers_are_blamed_right_and_their_kernels_reaped(pytester: pytest.Pytester, run,
                                                                   docker_ready: None) -> None:
    import docker

    pytester.makepyfile(test_inner=INNER)
    run_id = f"b41-{uuid.uuid4().hex[:12]}"

    result = run("-n", "2", "--hermes-transport=filecell,docker", f"--hermes-run-id={run_id}")

    out = "\n".join(result.outlines)
    result.assert_outcomes(passed=1, failed=4)  # test_c itself passed; three crashes and test_b
    # the worker that crashed in test_a[docker] alone held the run's docker container: it never left it
    client = docker.from_env()
    try:
        left = client.containers.list(all=True, sparse=True, filters={"label": f"org.hermes-kernel.run-id={run_id}"})
    finally:
        client.close()
    assert not left, f"containers of the run left behind: {[c.short_id for c in left]}"
    # and their run files (the state file; an sshd's private key): the controller lives, it held them
    assert not os.path.exists(run_dir_path(run_id)), f"the run's files were left: {os.listdir(run_dir_path(run_id))}"
    assert "container(s) of this run that only crashed workers held removed" in out, out[-3000:]
    for nodeid in ("test_inner.py::test_a[filecell]", "test_inner.py::test_a[docker]",
                   "test_inner.py::test_c[filecell]"):
        assert re.search(rf"worker 'gw\d+' crashed while running '{re.escape(nodeid)}'", out), out[-3000:]
        assert _reaped(out, nodeid) >= 1  # the runner (and its worker) where the kernel ran
    assert "an ordinary failure" in out and "FAILED test_inner.py::test_b - AssertionError" in out
    for name in ("a-filecell.json", "c-filecell.json"):
        note = json.loads((pytester.path / name).read_text())
        pid = str(note["pid"])
        wait_until(lambda: not processes_with_env("HERMES_KERNEL_HOST_PID", pid), 3.0,
                   what=f"the kernel processes of the crashed worker {pid} to be gone")
        assert not _kernel_dirs(note["kernel"]), "a reaped filecell runner's kernel dir was left behind"


def test_maxfail_stops_with_a_summary_and_no_internal_error(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(test_inner=INNER)

    result = run("-n", "2", "--maxfail=1", "--hermes-transport=filecell", "-k", "test_a or test_b")

    out = "\n".join(result.outlines + result.errlines)
    # xdist ends a --maxfail run as interrupted ("stopping after 1 failures")
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED), out[-3000:]
    assert "INTERNALERROR" not in out, out[-3000:]
    assert re.search(r"=+ \d+ failed.* in [\d.]+s", out), out[-3000:]  # it ended, with its summary
    pid_file = pytester.path / "a-filecell.json"
    if pid_file.exists():  # test_a ran (and crashed) before the run stopped: its kernel is gone
        note = json.loads(pid_file.read_text())
        pid = str(note["pid"])
        wait_until(lambda: not processes_with_env("HERMES_KERNEL_HOST_PID", pid), 3.0,
                   what="the crashed worker's kernel processes to be gone")
        assert not _kernel_dirs(note["kernel"]), "a reaped filecell runner's kernel dir was left behind"


def test_the_controller_reaps_a_dead_workers_kernels_inside_the_runs_containers(docker_ready: None) -> None:
    """What the controller does for a crashed worker's docker kernels where the host cannot see
    them (another engine, another machine): it asks inside each of the run's containers. Here the
    "crashed worker" is this process: its kernel's processes in the shared container must be
    found and killed (the container's root cannot read the kernel user's environments: a scan
    as root finds nothing)."""
    from pytest_hermes_kernel import KernelHandle
    from pytest_hermes_kernel.containers.sharing import current_run_id
    from pytest_hermes_kernel.plugin.crashes import reap_in_containers
    from pytest_hermes_kernel.transports import make_transport

    transport = make_transport("docker", server=False)
    kernel = KernelHandle(transport).start()
    try:
        assert kernel.execute("1").ok
        runner_alive = lambda: transport.alive(kernel.launched)  # noqa: E731
        assert runner_alive()

        killed = reap_in_containers(os.getpid(), current_run_id())

        assert killed >= 1, "the kernel's runner must be found and killed inside the container"
        wait_until(lambda: not runner_alive(), 5.0, what="the reaped kernel's runner to be gone")
    finally:
        kernel.shutdown()
        transport.close()


def test_the_controller_reaps_a_dead_workers_kernels_inside_a_container_claimed_from_an_earlier_run(
        docker_ready: None, tmp_path) -> None:
    """With ``--hermes-reuse`` the run's docker container may be one an earlier run made and parked:
    its labels name that run, not this one. The scan by the run's id label skipped it, and a
    crashed worker's kernels in it ran on (the summary said 0 reaped) where the host cannot see them."""
    from pytest_hermes_kernel import KernelHandle
    from pytest_hermes_kernel.containers.reuse import ReusePolicy
    from pytest_hermes_kernel.plugin.crashes import reap_in_containers
    from pytest_hermes_kernel.transports import make_transport

    policy = ReusePolicy(directory=str(tmp_path))
    earlier, now = f"earlier-{uuid.uuid4().hex[:12]}", f"now-{uuid.uuid4().hex[:12]}"
    first = make_transport("docker", server=False, reuse=policy, run_id=earlier)
    try:
        KernelHandle(first).start().shutdown()
        parked = first.container_id
    finally:
        first.close()  # the run's last user: the container is parked
    transport = make_transport("docker", server=False, reuse=policy, run_id=now)
    try:
        kernel = KernelHandle(transport).start()
        try:
            assert kernel.execute("1").ok and transport.container_id == parked  # claimed, labelled by `earlier`

            killed = reap_in_containers(os.getpid(), now)

            assert killed >= 1, "the kernel's runner in the claimed container must be found and killed"
            wait_until(lambda: not transport.alive(kernel.launched), 5.0, what="the reaped kernel's runner to be gone")
        finally:
            kernel.shutdown()
    finally:
        transport.close()
        from pytest_hermes_kernel.containers.lifecycle import remove_container

        remove_container(parked)
