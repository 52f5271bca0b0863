"""The local kernel server keeps one kernel forked ahead, its *spare* (kernel/runner/spare.py):
after a spawn it forks a supervisor that builds itself and forks its worker, both waiting for
the next kernel's config. A kernel taken from the spare must be exactly what a kernel forked at
the request is (issue #11: "an optimisation, never a semantic change"): its own id in both
processes' environ, its cwd, environment, output cap, random state; a restart's worker the same;
and the spare must die with its server, be replaced when it dies, and never hold a start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

from pytest_hermes_kernel import KernelHandle, start_kernel
from pytest_hermes_kernel.procs import pid_alive
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import kernels_shut_down_after, local_transport_closed_after, server_spare, wait_until  # noqa: F401 - fixtures

CWD_ENV_ID = "import os; (os.getcwd(), os.environ.get('HK_SPARE_X'), os.environ['HERMES_KERNEL_ID'])"


def _spare(transport: LocalTransport, kernels: list[KernelHandle]) -> tuple[int, int]:
    return server_spare(transport, (k.runner_pid for k in kernels))


def _start(kernels: list[KernelHandle], transport: LocalTransport, **options: object) -> KernelHandle:
    k = start_kernel(transport, **options)  # type: ignore[arg-type]
    kernels.append(k)
    return k


def test_a_kernel_taken_from_the_spare_is_a_kernel_of_its_own(transport, kernels, tmp_path):
    first = _start(kernels, transport)  # forked at the request; the server makes a spare after it
    first.execute("1")
    runner, worker = _spare(transport, kernels)

    k = _start(kernels, transport, cwd=str(tmp_path), env={"HK_SPARE_X": "yes"}, max_output_bytes=2048)

    assert (k.runner_pid, k.pid) == (runner, worker), "the kernel is the spare"
    assert k.execute(CWD_ENV_ID).value == repr((str(tmp_path), "yes", k.kernel_id))
    assert {int(line.split(":")[0]) for line in transport.kernel_processes(k.kernel_id)} == {runner, worker}
    big = k.execute("print('x' * 10000)")
    assert big.stdout_truncated and len(big.stdout) < 4000, "its own output cap, not the spare's default"
    draws = {h.execute("import random; random.random()").value for h in (first, k)}
    assert len(draws) == 2, "its own random state"
    assert psutil.Process(runner).cwd() == str(tmp_path)

    k.restart()  # a restart's worker is forked from the claimed supervisor: the kernel's, not the spare's
    assert k.pid != worker
    assert k.execute(CWD_ENV_ID).value == repr((str(tmp_path), "yes", k.kernel_id))
    assert {int(line.split(":")[0]) for line in transport.kernel_processes(k.kernel_id)} == {runner, k.pid}

    default = _start(kernels, transport)  # the next spare, with no cwd given: the kernel dir, as a fork's
    assert default.runner_pid == _spare_runner_of(default)
    assert default.execute(CWD_ENV_ID).value == repr((default.launched.kernel_dir, None, default.kernel_id))
    assert first.execute(CWD_ENV_ID).value == repr((first.launched.kernel_dir, None, first.kernel_id))


def _spare_runner_of(k: KernelHandle) -> int:
    """The runner pid of ``k``, checked to be a child of its server (taken from a spare or forked)."""
    assert psutil.Process(k.runner_pid).ppid() in k.transport.server_pids()
    return k.runner_pid


def test_a_spare_that_died_is_replaced_and_no_start_notices(transport, kernels):
    _start(kernels, transport).execute("1")
    runner, worker = _spare(transport, kernels)

    os.kill(runner, signal.SIGKILL)
    wait_until(lambda: not pid_alive(runner) and not pid_alive(worker), 5.0, what="the killed spare and its worker to end")

    k = _start(kernels, transport)
    assert k.execute("1").kernel.note == ""
    assert runner not in (k.runner_pid, k.pid)
    assert _spare(transport, kernels)[0] not in (runner, k.runner_pid)  # a new one, after that start


def test_the_spare_ends_with_its_server(transport, kernels):
    k = _start(kernels, transport)
    k.execute("x = 1")
    runner, worker = _spare(transport, kernels)
    (server,) = transport.server_pids()

    os.kill(server, signal.SIGKILL)

    wait_until(lambda: not pid_alive(runner) and not pid_alive(worker), 5.0, what="the spare to end with its server")
    assert k.execute("x").value == "1"  # a kernel taken before lives on its own lease


HOST = textwrap.dedent("""
    import json, time, psutil
    from pytest_hermes_kernel import start_kernel
    from pytest_hermes_kernel.transports.local import LocalTransport
    t = LocalTransport()
    ks = [start_kernel(t) for _ in range(2)]
    for k in ks:
        k.execute("1")
    (server,) = t.server_pids()
    deadline = time.monotonic() + 10
    while len(psutil.Process(server).children(recursive=True)) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)  # two kernels (runner + worker each) and the spare (the same)
    family = [p.pid for p in psutil.Process(server).children(recursive=True)]
    print(json.dumps({"server": server, "family": family}), flush=True)
    time.sleep(120)
""")


def test_host_death_ends_the_spare_with_the_server_and_its_kernels():
    host = subprocess.Popen([sys.executable, "-c", HOST], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]),
                                                                             os.environ.get("PYTHONPATH", "")])})
    try:
        seen = json.loads(host.stdout.readline())  # type: ignore[union-attr]
    finally:
        host.kill()
        host.wait()
        host.stdout.close()  # type: ignore[union-attr]
    pids = [seen["server"], *seen["family"]]
    assert len(pids) == 7, seen  # the server, two kernels and the spare, two processes each

    wait_until(lambda: not [p for p in pids if pid_alive(p)], 5.0, what="server, kernels and spare to end with their host")


def test_closing_the_transport_does_not_call_its_spare_left_behind(kernels):
    """At its close the transport notes what its server adopted (processes a kernel's cells left)
    for the leak check: the spare is the server's own, not one of those."""
    from pytest_hermes_kernel.procs import left_behind

    transport = LocalTransport()
    try:
        _start(kernels, transport).execute("1")
        runner, worker = _spare(transport, kernels)
        os.kill(runner, signal.SIGSTOP)  # it cannot end at the server's end before the check looks
    finally:
        for k in kernels:
            k.shutdown()
        kernels.clear()
        transport.close()
    try:
        assert runner not in left_behind()
    finally:
        os.kill(runner, signal.SIGKILL)
        os.kill(worker, signal.SIGKILL)


def test_a_spare_that_went_silent_is_given_up_and_its_kernel_spawned_and_said(transport, kernels):
    """A spare stopped (SIGSTOP) before its claim answers nothing: the server gives it up after
    ``CLAIM_WAIT_S``, kills it, and, since it may have touched the kernel's channel, has the host
    start that kernel by a plain spawn (said in its note), never on the channel the spare held."""
    _start(kernels, transport).execute("1")
    runner, worker = _spare(transport, kernels)
    os.kill(runner, signal.SIGSTOP)

    k = _start(kernels, transport)
    first = k.execute("x = 41; x + 1")

    assert first.value == "42", first.summary()
    assert "plain spawn" in first.kernel.note and "spare" in first.kernel.note, first.kernel.note
    assert psutil.Process(k.runner_pid).ppid() == os.getpid()  # spawned by this process
    wait_until(lambda: not pid_alive(runner) and not pid_alive(worker), 5.0, what="the silent spare to be killed")
    assert k.execute("x").value == "41"
