"""Docker transport: kernels detached inside a container, reached by exec (B26, B06).

Pids in these tests are pids inside the container; they are checked there, through the
transport (``kernel_processes``), never against the host's process table. Re-attach after a
dropped stream is part of the contract suite (``pytest_hermes_kernel/contract/reattach.py``,
run with ``--hermes-transport=docker tests/contract``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.faults.harness import HarnessKernel
from pytest_hermes_kernel.transports import get_transport, make_transport
from pytest_hermes_kernel.transports.docker.transport import DockerTransport
from tests.support import CellStarted, run_in_thread, wait_until

MIB = 1 << 20
pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.fixture
def docker() -> DockerTransport:
    """The session's shared docker transport (one container for the run)."""
    transport = get_transport("docker")
    assert isinstance(transport, DockerTransport)
    return transport


@pytest.fixture
def fresh_docker(request: pytest.FixtureRequest) -> Iterator[DockerTransport]:
    """A transport that gives each kernel its own container; ``mem_limit_bytes`` via indirect param."""
    transport = make_transport("docker", container="fresh", mem_limit_bytes=getattr(request, "param", None))
    yield transport
    transport.close()


def _exists_in(transport: DockerTransport, container_id: str, path: str) -> bool:
    code, _, _ = transport._run(container_id, ["test", "-e", path])
    return code == 0


def test_state_persists_in_a_kernel_inside_the_container(docker, start):
    k = start(docker)
    k.execute("import os\nx = 41")

    r = k.execute("x + 1, os.path.exists('/.dockerenv'), os.getcwd()")

    assert r.status == "ok"
    assert r.value == f"(42, True, '/tmp/hermes-kernels/{k.kernel_id}')"
    assert k.launched.extra["container"] == docker.container_id


def test_kernel_dir_is_private_to_the_container_user(docker, start):
    k = start(docker)
    cid = k.launched.extra["container"]

    kdir = k.launched.kernel_dir
    code, out, _ = docker._run(cid, ["stat", "-c", "%a %U", kdir, f"{kdir}/runner.log"])

    assert code == 0 and out.decode().split("\n")[:2] == ["700 hermes", "600 hermes"]


def test_interrupt_of_a_long_sleep_arrives(docker, start):
    """B26 step 2: the interrupt travels on the channel; the supervisor signals inside the container."""
    started = CellStarted()
    k = start(docker, tools=started.tools())
    k.execute("import time\nkept = 'yes'")
    fut = run_in_thread(k, started.CODE + "time.sleep(600)")
    started.wait()

    k.interrupt()
    r = fut.result(timeout=60)  # (an interrupt that never arrives leaves the 600-s sleep running)

    # the interrupt ended it; how soon (the case's "within 2 s") is benchmarks/handed_bounds.py's figure
    assert r.status == "interrupted" and r.ename == "KeyboardInterrupt", r.summary()
    assert k.execute("kept").value == "'yes'"


def test_shutdown_leaves_no_kernel_process_or_dir_in_the_container(docker, start):
    k = start(docker)
    k.execute("import subprocess\np = subprocess.Popen(['sleep', '300'])")
    cid, kdir = k.launched.extra["container"], k.launched.kernel_dir
    assert len(docker.kernel_processes(k.kernel_id)) >= 3  # runner, worker, sleep

    info = k.shutdown()

    assert info.step in ("request", "sigterm", "sigkill")
    wait_until(lambda: not docker.kernel_processes(k.kernel_id), 5.0, what="every kernel process to end")
    assert not _exists_in(docker, cid, kdir)


def test_kill_ends_the_runner_session_from_outside(docker, start):
    k = start(docker)
    k.execute("import subprocess\np = subprocess.Popen(['sleep', '300'], start_new_session=False)")

    assert docker.kill(k.launched) is True

    assert docker.kernel_processes(k.kernel_id) == []
    assert docker.alive(k.launched) is False


def test_host_sigkill_kernel_exits_within_orphan_timeout(docker):
    """B26 step 3: the host holding the exec socket is SIGKILLed; the orphan timer ends the kernel."""
    docker.shared_container()  # joined by this process first: the harness's death removes nothing
    harness = HarnessKernel("docker", {"orphan_timeout": 2.0})
    try:
        assert harness.execute("import os\nos.getpid()").value == str(harness.pid)
        assert harness.survivors()

        harness.kill_host()
        left = harness.wait_kernel_gone(2.0 + 3.0)
    finally:
        harness.shutdown()

    assert left == []
    assert harness.facts["locator"]["container_id"] == docker.container_id  # the harness joined our run
    assert docker.container_running(harness.facts["locator"]["container_id"])  # its death removed nothing shared


def test_container_stop_mid_cell_reports_transport_lost_without_hanging(fresh_docker, start):
    """B26 step 4: the relay stream ends with the container; re-attach fails fast."""
    started = CellStarted()
    k = start(fresh_docker, tools=started.tools())
    cid = k.launched.extra["container"]
    fut = run_in_thread(k, started.CODE + "import time\ntime.sleep(600)")
    started.wait()

    stop_timeout = 10
    stopped = time.monotonic()
    fresh_docker.api.stop(cid, timeout=stop_timeout)
    r = fut.result(timeout=stop_timeout + 10)

    assert time.monotonic() - stopped <= stop_timeout + 3.0
    assert r.status == "died" and r.kernel.reason == "transport_lost", r.summary()
    assert fresh_docker.alive(k.launched) is False
    after = k.execute("1 + 1")  # a new runner in a new container; the state is gone
    assert after.value == "2" and after.kernel.state_lost and after.kernel.generation == 1


@pytest.mark.parametrize("fresh_docker", [256 * MIB], indirect=True)
def test_oom_in_a_memory_limited_container_is_reported_as_oom_killed(fresh_docker, start):
    """B06: the kernel is not PID 1; the memory cgroup's oom_kill counter tells an OOM kill."""
    k = start(fresh_docker)
    cid = k.launched.extra["container"]
    assert _exists_in(fresh_docker, cid, "/sys/fs/cgroup/memory/memory.oom_control") or \
        _exists_in(fresh_docker, cid, "/sys/fs/cgroup/memory.events")

    r = k.execute("hog = []\nwhile True:\n    hog.append(b'x' * (32 * 2**20))", timeout=60)

    assert r.status == "died" and r.kernel.reason == "oom_killed" and r.kernel.oom_killed, r.summary()
    assert k.execute("'usable'").value == "'usable'"

    control = k.execute("import os\nos.kill(os.getpid(), 9)")  # SIGKILL that is not the OOM killer
    assert control.status == "died" and control.kernel.reason == "died" and not control.kernel.oom_killed
    assert k.execute("2 + 2").value == "4"


def test_a_containers_user_is_read_once_for_every_transport_of_the_process(start, monkeypatch):
    """The ``id`` exec that finds the container user's uid and gid (kernel dirs are theirs) runs
    once per container, not once per transport instance: a second transport of the run, in the
    same container, starts spawn-path kernels without it (80 such execs in one suite run)."""
    from pytest_hermes_kernel.transports.docker import transport as docker_module

    one, other = make_transport("docker", server=False), make_transport("docker", server=False)
    try:
        cid = start(one).launched.extra["container"]
        asked: list[list[str]] = []
        run = other._run

        def recording(container_id, argv, **kw):
            asked.append(list(argv))
            return run(container_id, argv, **kw)

        monkeypatch.setattr(other, "_run", recording)
        k = start(other)
        assert k.launched.extra["container"] == cid, "the run's one shared container"
        assert ["sh", "-c", "id -u; id -g"] not in asked, asked
        uid = docker_module._CONTAINER_OWNERS[(other.engine, cid)][0]
        assert k.execute("import os; os.getuid()").value == str(uid), "the kernel runs as the user read once"
        k.shutdown()
    finally:
        one.close()
        other.close()
