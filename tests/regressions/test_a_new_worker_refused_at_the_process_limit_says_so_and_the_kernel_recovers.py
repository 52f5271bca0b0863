"""Found by a breaker helper (the host out of resources, 2026-12-06): a cell's worker died (a crash,
an ``os._exit``) while its host was at its process limit (a pids cgroup: a CI job container's
``--pids-limit``; ``ulimit -u``), and the kernel runner's fork of the next cell's worker was
refused: the runner itself died of the ``BlockingIOError``, and the next cell raised
``ChannelClosed: kernel ... closed: end of stream (the kernel runner or its relay is gone)``, naming
no limit. The kernel stayed closed for good once processes were free again. The runner now
answers that no worker could be made, naming the process limit, and the cell after the limit
was lifted runs on a fresh worker.

The local job runs in a pids cgroup of its own, its limit lowered to the tasks it holds; the slot
the dead worker frees is taken back (the limit lowered again) before the next cell is sent. (The
job once filled the group with ``sleep`` processes until a fork was refused: a fork refused for
another reason, or a task that ended after the fill, left room for the next worker; on the server
path its spare's worker, forked late, could take the freed slot.) A docker kernel's fresh container
gets a pids limit (its cgroup's ``pids.max``, what ``--pids-limit`` sets), filled by a cell's
detached ``sleep`` processes and, after the worker died, lowered to what it holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_hermes_kernel
from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.support import PIDS_V1, pids_cgroup, transport_of_its_own

JOB = """
import os, sys, time
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

GROUP = os.environ["GROUP"]
def tasks():
    with open(os.path.join(GROUP, "pids.current")) as fh:
        return int(fh.read())
def limit(value):
    with open(os.path.join(GROUP, "pids.max"), "w") as fh:
        fh.write(str(value))
def spare_made():  # the server forks its spare (a supervisor, then its worker) after the start's answer:
    import psutil  # one still forking would take the slot the dead worker frees
    if not transport.server_pids():
        return True
    try:
        return len([p for p in psutil.Process(transport.server_pids()[0]).children(recursive=True)
                    if p.environ().get("HERMES_KERNEL_ID", "").startswith("hermes-kernel-server")]) == 2
    except psutil.Error:
        return False
def wait(condition, what):
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(what)
        time.sleep(0.01)

transport = make_transport("local", server=sys.argv[1] == "server")
try:
    kernel = start_kernel(transport, timeout=30)
    wait(spare_made, "the server's spare was never made")
    held = tasks()
    limit(held)  # the job is at its pids limit
    print("DIED", kernel.execute("import os; os._exit(3)", timeout=30).status, flush=True)
    wait(lambda: tasks() < held, "the dead worker's slot never came free")  # reaped (at once, here)
    limit(tasks())  # the slot it freed taken back
    try:
        print("NEXT", kernel.execute("1 + 1", timeout=30).status, flush=True)
    except Exception as exc:
        print("ERROR", type(exc).__name__, repr(str(exc)), flush=True)
    limit("max")
    print("AFTER", kernel.execute("2 + 2", timeout=30).value, flush=True)
    kernel.shutdown()
finally:
    limit("max")
    transport.close()
"""


@pytest.mark.parametrize("path", ["server", "spawn"])
def test_a_worker_the_process_limit_refused_is_named_and_the_next_cell_runs(tmp_path: Path, path: str) -> None:
    (tmp_path / "job.py").write_text(JOB)
    with pids_cgroup(60) as group:
        env = {**os.environ, "GROUP": group, "PYTHONPATH": str(Path(pytest_hermes_kernel.__file__).parents[1]),
               "PYTEST_HERMES_KERNEL_DIR": str(tmp_path)}
        ran = subprocess.run(["sh", "-c", f'echo $$ > "$GROUP/cgroup.procs" && exec {sys.executable} job.py {path}'],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    out = ran.stdout + ran.stderr
    assert "DIED died" in ran.stdout, out
    assert "ERROR KernelStartError" in ran.stdout, out  # was ChannelClosed: the runner died of the refused fork
    assert "could not fork a new worker: [Errno 11] Resource temporarily unavailable" in ran.stdout, out
    assert "run out of processes (ulimit -u, a pids cgroup" in ran.stdout, out
    assert "AFTER 4" in ran.stdout, out  # the kernel recovered once processes were free
    assert [n for n in os.listdir(tmp_path) if n != "job.py"] == [], os.listdir(tmp_path)  # no kernel dir left


FILL_CELL = """
import subprocess
held = []
while True:  # the container at its pids limit: these outlive the worker (sessions of their own)
    try:
        held.append(subprocess.Popen(["sleep", "300"], start_new_session=True))
    except OSError:
        break
"""


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_docker_worker_the_pids_limit_refused_is_named_and_the_next_cell_runs(docker_ready: None,
                                                                               server: bool) -> None:
    with transport_of_its_own("docker", server=server, container="fresh") as transport:
        kernel = start_kernel(transport)
        container = kernel.start().launched.extra["container"]  # type: ignore[union-attr]
        group = os.path.join(PIDS_V1, "docker", container)
        if os.geteuid() != 0 or not os.path.exists(os.path.join(group, "pids.max")):
            pytest.skip("needs root and the container's cgroup v1 pids group")
        with open(os.path.join(group, "pids.current")) as fh:
            limit = int(fh.read()) + 5
        with open(os.path.join(group, "pids.max"), "w") as fh:
            fh.write(str(limit))
        try:
            assert kernel.execute(FILL_CELL).status == "ok"
            assert kernel.execute("import os; os._exit(3)").status == "died"
            with open(os.path.join(group, "pids.current")) as fh:  # the dead worker's slot (reaped: its
                now = int(fh.read())  # result came after its supervisor's waitpid), taken back: a
            with open(os.path.join(group, "pids.max"), "w") as fh:  # `docker exec` to fill it needed a
                fh.write(str(now))  # slot of its own for runc's init, and failed at times (500)
            with pytest.raises(KernelStartError) as info:  # the runner died of the refused fork: ChannelClosed
                kernel.execute("1 + 1")
        finally:
            with open(os.path.join(group, "pids.max"), "w") as fh:
                fh.write("max")
        text = str(info.value)
        assert "could not fork a new worker: [Errno 11] Resource temporarily unavailable" in text, text
        assert "run out of processes (ulimit -u, a pids cgroup: a container's --pids-limit)" in text, text
        assert kernel.execute("2 + 2").value == "4"
        kernel.shutdown()
