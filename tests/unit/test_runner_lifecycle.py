"""What the runner reports about a kernel's end, on real local kernels.

The shutdown ladder (request -> SIGTERM -> SIGKILL, each rung waiting ``shutdown_grace``) says
which rung ended the worker and with which code or signal; a cell cut by the shutdown says so;
a worker that died between cells is reported, with its exit code or signal, by the next cell.
Written against the survivors of the mutation run (``benchmarks/mutation.py``, issue #13).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from pytest_hermes_kernel.errors import KernelShutdownError
from pytest_hermes_kernel.kernel import link as link_module
from pytest_hermes_kernel.kernel.options import WatchdogPolicy
from tests.support import CellStarted, gone, run_in_thread, wait_until

GRACE = 0.5
IGNORE_SIGTERM = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
SLEEP = "import time\ntime.sleep(60)\n"


def _shutdown_mid_cell(make_kernel, setup: str = ""):
    """Shut a kernel down while a cell sleeps after ``setup``: (kernel, exit info, seconds the
    shutdown took, the cell's result)."""
    probe = CellStarted()
    k = make_kernel(shutdown_grace=GRACE, tools=probe.tools())
    cell = run_in_thread(k, setup + probe.CODE + SLEEP)  # the setup has run once the cell reports
    probe.wait()
    started = time.monotonic()
    info = k.shutdown()
    took = time.monotonic() - started
    return k, info, took, cell.result(timeout=30)


def test_an_idle_kernel_exits_when_asked(make_kernel):
    k = make_kernel(shutdown_grace=GRACE)
    k.execute("1")
    pid = k.pid

    info = k.shutdown()

    assert (info.step, info.exit_code, info.signal, info.confirmed, info.note) == ("request", 0, None, True, "")
    assert gone(pid)
    assert k.shutdown() is info, "shutdown is idempotent and says the same"
    with pytest.raises(KernelShutdownError):
        k.execute("1")


def test_a_running_cell_is_ended_by_sigterm(make_kernel):
    k, info, took, cut = _shutdown_mid_cell(make_kernel)

    assert (info.step, info.exit_code, info.signal, info.note) == ("sigterm", 128 + signal.SIGTERM, signal.SIGTERM, "")
    assert took < GRACE + 5.0, "SIGTERM worked: the ladder did not wait for its last rung"
    assert cut.status == "died" and cut.kernel.state_lost and cut.kernel.reason == "reset"
    assert "shut down while the cell ran" in cut.kernel.note


def test_a_cell_ignoring_sigterm_is_ended_by_sigkill_after_the_grace(make_kernel):
    k, info, took, cut = _shutdown_mid_cell(make_kernel, IGNORE_SIGTERM)

    assert (info.step, info.exit_code, info.signal) == ("sigkill", 128 + signal.SIGKILL, signal.SIGKILL)
    assert info.note == "forced kill after grace" and info.confirmed
    assert took >= GRACE, "SIGTERM had its grace before the SIGKILL"
    assert took < GRACE + 3.0, "the SIGTERM rung waits the shutdown grace, not the kill wait (5 s)"
    assert cut.status == "died" and cut.kernel.reason == "reset"


def test_shutdown_now_kills_the_tree_from_outside(make_kernel):
    k = make_kernel()
    k.execute("1")
    worker, runner = k.pid, k.runner_pid

    info = k.shutdown(now=True)

    assert (info.step, info.signal, info.confirmed) == ("sigkill", signal.SIGKILL, True)
    assert "killed from outside" in info.note
    wait_until(lambda: gone(worker) and gone(runner), 5.0, what="the killed kernel's processes to be gone")


@pytest.mark.parametrize("how, code, sig", [
    ("exit code", 7, None),
    ("signal", 128 + signal.SIGKILL, signal.SIGKILL),
])
def test_a_worker_dead_between_cells_is_reported_by_the_next_cell(make_kernel, how, code, sig):
    k = make_kernel()
    k.execute("x = 1")
    pid = k.pid
    if sig is None:
        k.execute("import os, threading, time\n"
                  "threading.Thread(target=lambda: (time.sleep(0.2), os._exit(7))).start()")
    else:
        os.kill(pid, sig)
    wait_until(lambda: gone(pid), 5.0, what="the worker to die between cells")

    r = k.execute("'next'")

    assert r.status == "ok" and r.value == "'next'", "the cell ran on a fresh worker"
    assert r.kernel.state_lost and r.kernel.reason == "died" and r.kernel.generation == 1
    assert (r.kernel.exit_code, r.kernel.signal) == (code, sig)
    assert "between cells" in r.kernel.note and r.kernel.pid != pid
    again = k.execute("'after'")
    assert not again.kernel.state_lost and again.kernel.exit_code is None, "the death is reported once"


def test_shutdown_of_a_kernel_whose_worker_already_died_says_how_it_died(make_kernel):
    k = make_kernel()
    k.execute("import os, threading, time\n"
              "threading.Thread(target=lambda: (time.sleep(0.2), os._exit(9))).start()")
    pid = k.pid
    wait_until(lambda: gone(pid), 5.0, what="the worker to die between cells")

    info = k.shutdown()

    assert (info.step, info.exit_code, info.signal, info.confirmed) == ("already-exited", 9, None, True)


def test_the_cell_after_a_lost_runner_reports_the_same_loss_as_the_cut_cell(make_kernel):
    probe = CellStarted()
    k = make_kernel(tools=probe.tools())
    k.execute("keep = 1")
    cell = run_in_thread(k, probe.CODE + SLEEP)
    probe.wait()
    runner = k.runner_pid

    os.kill(runner, signal.SIGKILL)  # the whole runner is gone mid-cell, not just the worker
    cut = cell.result(timeout=30)
    nxt = k.execute("'back'")

    assert cut.status == "died" and cut.kernel.state_lost and cut.kernel.reason == "died", cut.summary()
    assert nxt.value == "'back'" and nxt.kernel.state_lost and nxt.kernel.reason == "died"
    assert nxt.kernel.note == cut.kernel.note, "the next cell tells the recorded cause, not a generic one"
    assert k.runner_pid != runner and k.execute("'again'").kernel.state_lost is False


def test_a_restart_during_a_cell_ends_that_cell_as_reset(make_kernel):
    probe = CellStarted()
    k = make_kernel(tools=probe.tools())
    k.execute("keep = 1")
    cell = run_in_thread(k, probe.CODE + SLEEP)
    probe.wait()
    old = k.pid

    info = k.restart()
    cut = cell.result(timeout=30)

    assert info.state_lost and info.reason == "reset"
    assert cut.status == "died" and cut.kernel.state_lost and cut.kernel.reason == "reset", cut.summary()
    assert cut.kernel.signal == signal.SIGKILL, "the cut cell says how its worker ended"
    r = k.execute("'fresh' if 'keep' not in globals() else 'stale'")
    assert r.value == "'fresh'" and r.kernel.pid != old


def test_the_runner_holds_no_more_fds_after_its_worker_was_replaced(make_kernel):
    import psutil

    k = make_kernel()
    k.execute("1")
    supervisor = psutil.Process(k.runner_pid)
    baseline = supervisor.num_fds()

    for _ in range(3):
        k.restart()
        assert k.execute("1").value == "1"

    assert supervisor.num_fds() == baseline, "each replaced worker must leave nothing open in the runner"


WORKER_KILLED_AT_ONCE = r"""
import os, selectors, signal, time
from pytest_hermes_kernel.kernel.runner.worker_process import WorkerProcess

wp = WorkerProcess({}, selectors.DefaultSelector(), (os.pipe()[1], os.pipe()[1]))
pid = wp.start(lambda: time.sleep(1.0))  # the child is slow to run: the group must exist already
assert os.getpgid(pid) == pid, ("the worker is not its own group yet", os.getpgid(pid), pid)
wp.signal_group(signal.SIGKILL)
print(wp.wait(5.0))
"""


def test_a_worker_signalled_the_moment_it_was_forked_is_hit():
    """The supervisor makes the worker its own process group right after the fork, not only the
    worker itself once it runs: a kill in between (a ``restart()`` right after the start) found
    no group, missed the worker, and the "new" worker was the old one with its state."""
    out = subprocess.run([sys.executable, "-c", WORKER_KILLED_AT_ONCE], capture_output=True, text=True, timeout=60)

    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(137, 9)", out.stdout


HOLD_THE_CHANNEL_AND_DIE = (  # a process the cell started inherits the worker's sockets; the worker exits
    "import os, stat, subprocess\n"
    "def is_socket(fd):\n"
    "    try:\n"
    "        return stat.S_ISSOCK(os.fstat(fd).st_mode)\n"
    "    except OSError:\n"
    "        return False\n"
    "subprocess.Popen(['sleep', '60'], pass_fds=[fd for fd in range(3, 1024) if is_socket(fd)])\n"
    "os._exit(3)\n")


def test_a_worker_dead_mid_cell_is_reported_at_once_while_a_process_it_started_holds_its_channel(make_kernel):
    """The runner learns of its worker's death from the exit itself (SIGCHLD, ``waitpid``), not
    from the worker's socket closing: a child that inherited the socket keeps it open."""
    k = make_kernel(watchdog=WatchdogPolicy(interrupt_grace=0.5, kill_grace=0.5))  # a death missed: ~6 s, not 12
    k.execute("x = 1")
    pid = k.pid
    started = time.monotonic()

    r = k.execute(HOLD_THE_CHANNEL_AND_DIE, timeout=5)  # past the 4-s bound: a death seen only then fails it

    assert r.status == "died" and (r.kernel.exit_code, r.kernel.signal) == (3, None), r.summary()
    assert time.monotonic() - started < 4, "reported when the worker died, not at the cell's timeout"
    nxt = k.execute("'x' in globals()")
    assert nxt.value == "False" and nxt.kernel.pid != pid, "the next cell ran on a fresh worker"



def unread_bytes(pid: int) -> int:
    """Bytes waiting, unread, in the receive queues of process ``pid``'s Unix sockets (``ss -x``)."""
    out = subprocess.run(["ss", "-xpn"], capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[2]) for line in out.splitlines() if re.search(rf"\bpid={pid},", line))


needs_ss = pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2) to see a socket's unread bytes")


@needs_ss
def test_a_stopped_worker_killed_with_its_cells_request_unread_is_reported_killed(make_kernel):
    """A worker that dies with frames of the runner unread makes the runner's read fail
    (``ECONNRESET``, not an end of stream): that is its death too, and the runner lives on."""
    k = make_kernel()
    k.execute("x = 1")
    pid, runner = k.pid, k.runner_pid
    os.kill(pid, signal.SIGSTOP)
    cell = run_in_thread(k, "'never read'")
    wait_until(lambda: unread_bytes(pid) > 0, 10.0, what="the cell's request to reach the stopped worker")

    os.kill(pid, signal.SIGKILL)
    r = cell.result(timeout=30)

    _killed_and_the_runner_lived_on(r, k, runner)


@needs_ss
def test_a_worker_killed_while_its_tool_result_is_on_the_way_is_reported_killed(make_kernel):
    """The runner reads the tool's result before it sees the worker's death (the test stops the
    runner until both are there): the result cannot be handed on, and that is not the runner's end."""
    stopped = threading.Event()

    def stall() -> str:
        os.kill(k.runner_pid, signal.SIGSTOP)  # the result below waits in the runner's socket
        stopped.set()
        return "late"

    k = make_kernel(tools={"stall": stall})
    k.execute("x = 1")
    pid, runner = k.pid, k.runner_pid
    cell = run_in_thread(k, "import hermes_tools\nhermes_tools.stall()\n'never'")
    try:  # (the tool first: other bytes waiting a moment in a busy runner's socket passed the wait below, the
        assert stopped.wait(10.0), "the tool was never called"  # SIGCONT came before the SIGSTOP, which then held)
        wait_until(lambda: unread_bytes(runner) > 0, 10.0, what="the tool's result to reach the stopped runner")
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: gone(pid), 5.0, what="the worker to die")
    finally:
        os.kill(runner, signal.SIGCONT)
    try:
        r = cell.result(timeout=30)
    except TimeoutError:  # seen once in a full run, not reproduced since: say where things stood
        pytest.fail(f"no result 30 s after the runner was continued; {_where_things_stand(runner, pid)}")

    _killed_and_the_runner_lived_on(r, k, runner)


def _where_things_stand(runner: int, worker: int) -> str:
    """The runner's and worker's states and the runner's Unix sockets (``ss -xpn``): for a failure message."""
    def state(pid: int) -> str:
        try:
            return str(psutil.Process(pid).status())
        except psutil.Error as exc:
            return type(exc).__name__

    out = subprocess.run(["ss", "-xpn"], capture_output=True, text=True).stdout
    sockets = [line for line in out.splitlines() if re.search(rf"\bpid={runner},", line)]
    return f"runner {runner}: {state(runner)}; worker {worker}: {state(worker)}; runner sockets: {sockets}"


@needs_ss
def test_a_shutdown_read_before_the_workers_death_was_seen_says_it_had_exited(make_kernel, monkeypatch):
    """The worker is killed while the runner (stopped by the test) has the shutdown request unread:
    the shutdown finds it dead and says ``already-exited`` with its signal, not a rung it tried.
    The host's request waits a 10-s grace: with 0.5 s a loaded machine's host went on to its own
    rungs (the group killed) before the test had killed the worker (``ProcessLookupError``, 1 of 6
    runs), and with a dead worker the runner answers at once, so no run waits the grace out. Nor
    does the host look whether the runner is frozen while it waits (every ``FROZEN_CHECK_S``,
    0.5 s): it is, by the test's SIGSTOP, and a loaded machine's host gave it up as ``unreachable``
    and killed the group itself before the test had (3 of 40 runs at load 12, some a
    ``ProcessLookupError`` here)."""
    monkeypatch.setattr(link_module, "FROZEN_CHECK_S", 3600.0)  # (what a frozen runner gets: its own cases)
    k = make_kernel(shutdown_grace=10.0)
    k.execute("x = 1")
    pid, runner = k.pid, k.runner_pid
    infos = []
    os.kill(runner, signal.SIGSTOP)
    try:
        ending = threading.Thread(target=lambda: infos.append(k.shutdown()))
        ending.start()
        wait_until(lambda: unread_bytes(runner) > 0, 10.0, what="the shutdown request to reach the stopped runner")
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: gone(pid), 5.0, what="the worker to die")
    finally:
        os.kill(runner, signal.SIGCONT)
    ending.join(30)

    assert [(i.step, i.exit_code, i.signal, i.confirmed) for i in infos] == [
        ("already-exited", 128 + signal.SIGKILL, signal.SIGKILL, True)]


@needs_ss
def test_a_watchdog_kill_that_crosses_its_cells_result_keeps_the_namespace(make_kernel, tmp_path, monkeypatch):
    """The ladder's interrupt ends the cell just after its grace, so the host has sent the kill
    when the cell's result comes: the runner (stopped by the test until the worker's result and
    the host's interrupt and kill are all there) reads the result first and must not then kill
    the idle worker; the cell is a timeout that the interrupt ended, the namespace kept.
    (Seen under load on the output flood test: the result said ``interrupted``, and the kill
    that followed it had lost the namespace unreported.)"""
    k = make_kernel(watchdog=WatchdogPolicy(interrupt_grace=0.3, kill_grace=10.0))
    k.execute("x = 41")
    pid, runner = k.pid, k.runner_pid
    channel, sent = k._runtime.require_link().channel, []
    send = channel.send
    monkeypatch.setattr(channel, "send", lambda header: (sent.append(header.get("type")), send(header))[1])
    flag = tmp_path / "sleeping"
    cell = run_in_thread(k, f"import pathlib, time\npathlib.Path({str(flag)!r}).touch()\ntime.sleep(60)", timeout=3.0)
    wait_until(flag.exists, 10.0, what="the cell to start sleeping")
    os.kill(runner, signal.SIGSTOP)
    try:
        os.kill(pid, signal.SIGINT)  # the worker ends the cell; its result waits in the runner's socket
        wait_until(lambda: unread_bytes(runner) > 0, 10.0, what="the cell's result to reach the stopped runner")
        assert "interrupt" not in sent, "precondition: the result was queued before the host's interrupt"
        wait_until(lambda: "kill_worker" in sent, 10.0, what="the host's watchdog to send its kill")
    finally:
        os.kill(runner, signal.SIGCONT)
    r = cell.result(timeout=30)

    assert (r.status, r.watchdog, r.ename) == ("timeout", "interrupted", "KeyboardInterrupt"), r.summary()
    assert not r.kernel.state_lost and k.pid == pid
    assert k.execute("x + 1").value == "42"


def test_output_still_in_the_pipes_when_the_result_comes_is_in_the_result(make_kernel):
    """The runner reads a pipe a chunk at a time; what the cell wrote just before it ended is
    still there when its result arrives, and belongs to that result."""
    k = make_kernel()

    r = k.execute('import os\nos.write(1, b"x" * 500_000)\nos.write(2, b"e" * 300_000)\n"done"')

    assert r.value == "'done'" and not r.stdout_truncated and not r.stderr_truncated
    assert r.stdout == "x" * 500_000 and r.stderr == "e" * 300_000


def _killed_and_the_runner_lived_on(r, k, runner: int) -> None:  # noqa: ANN001 - a result, a kernel
    assert r.status == "died" and (r.kernel.exit_code, r.kernel.signal) == (128 + signal.SIGKILL, signal.SIGKILL), r.summary()
    assert k.execute("'next'").value == "'next'" and k.runner_pid == runner, "the runner lived on"
