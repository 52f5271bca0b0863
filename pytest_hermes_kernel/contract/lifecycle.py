"""Contract: a kernel keeps its namespace, and every way it can end is reported honestly."""

from __future__ import annotations

import os
import threading
import time

import pytest

from ..procs import processes_with_env
from ..transports.runner_zipapp import NAME_PREFIX, ZIP_PACKAGE
from ._probes import CellStarted, gone_in_kernel, kernel_pids, run_in_thread, wait_until

#: Seconds within which every process of a kernel is gone after ``Transport.kill`` returned ...
KILLED_GONE_S = 5.0
#: ... and within which a process just started is listed by ``Transport.kernel_processes``.
LISTED_S = 5.0
#: A cell that starts a child of the worker (``sleep 30``) and gives its pid.
START_CHILD = "import subprocess\nchild = subprocess.Popen(['sleep', '30'])\nchild.pid"


def test_namespace_persists_across_cells(kernel):
    first = kernel.execute("x = 41\ndef inc(v):\n    return v + 1")
    second = kernel.execute("inc(x)")

    assert first.status == "ok" and first.value is None, first.summary()
    assert second.status == "ok" and second.value == "42", second.summary()
    assert second.kernel.reused and not second.kernel.state_lost
    assert second.kernel.generation == first.kernel.generation == 0
    assert second.kernel.pid == first.kernel.pid == kernel.pid
    assert (first.execution_count, second.execution_count) == (1, 2)


def test_value_is_repr_of_trailing_expression(kernel):
    assert kernel.execute("'a' + 'b'").value == "'ab'"
    assert kernel.execute("None").value is None
    assert kernel.execute("[1, 2][-1]").value == "2"


def test_error_keeps_the_kernel_and_its_state(kernel):
    kernel.execute("keep = 'me'")
    pid = kernel.pid

    r = kernel.execute("def f():\n    return 1 / 0\nf()")

    assert r.status == "error", r.summary()
    assert r.ename == "ZeroDivisionError" and "division by zero" in r.evalue
    assert "<cell>" in r.traceback
    assert ZIP_PACKAGE not in r.traceback and NAME_PREFIX not in r.traceback  # none of the runner's frames
    assert not r.kernel.state_lost
    after = kernel.execute("keep")
    assert after.value == "'me'" and after.kernel.pid == pid and after.kernel.generation == 0


def test_syntax_error_is_a_cell_error(kernel):
    r = kernel.execute("def broken(:\n")
    assert r.status == "error" and r.ename == "SyntaxError", r.summary()
    assert kernel.execute("1 + 1").value == "2"


def test_restart_loses_state_and_bumps_generation(kernel):
    kernel.execute("x = 1")
    old_pid = kernel.pid

    info = kernel.restart()

    assert info.state_lost and info.reason == "reset"
    assert gone_in_kernel(kernel, old_pid), "the old worker must be dead before restart() returns"
    r = kernel.execute("x")
    assert r.status == "error" and r.ename == "NameError", r.summary()
    assert r.kernel.generation == 1 and r.kernel.pid != old_pid
    assert r.kernel.state_lost and r.kernel.reason == "reset"
    assert not kernel.execute("1").kernel.state_lost  # reported once, not forever


def test_system_exit_ends_the_kernel_and_keeps_the_code(kernel):
    kernel.execute("k = 42")
    old_pid = kernel.pid

    r = kernel.execute("import sys; sys.exit(3)")

    assert r.status == "exited", r.summary()
    assert r.kernel.exit_code == 3 and r.kernel.signal is None and not r.kernel.oom_killed
    assert r.kernel.state_lost and r.kernel.reason == "exited"
    wait_until(lambda: gone_in_kernel(kernel, old_pid), 2.0, what="the exited worker to be gone")
    nxt = kernel.execute("k")
    assert nxt.status == "error" and nxt.ename == "NameError", nxt.summary()
    assert nxt.kernel.state_lost and nxt.kernel.reason == "exited" and nxt.kernel.exit_code == 3
    assert nxt.kernel.generation == r.kernel.generation + 1


def test_system_exit_message_is_shown(kernel):
    r = kernel.execute('raise SystemExit("goodbye")')
    assert r.status == "exited" and r.kernel.exit_code == 1, r.summary()
    assert "goodbye" in r.stderr and r.evalue == "goodbye"


def test_exit_builtin_closing_stdin_is_harmless(kernel):
    r = kernel.execute("exit()")
    assert r.status == "exited" and r.kernel.exit_code == 0, r.summary()
    assert kernel.execute("2 * 21").value == "42"


def test_os_exit_is_detected_quickly_with_its_code(kernel):
    started = time.monotonic()
    r = kernel.execute("import os; os._exit(5)")
    elapsed = time.monotonic() - started

    assert elapsed < 2.0
    assert r.status == "died", r.summary()
    assert r.kernel.exit_code == 5 and r.kernel.signal is None and not r.kernel.oom_killed
    assert r.kernel.state_lost and r.kernel.reason == "died"
    nxt = kernel.execute("'back'")
    assert nxt.value == "'back'" and nxt.kernel.state_lost and nxt.kernel.exit_code == 5


def test_interrupt_from_another_thread_keeps_state(kernel_factory):
    """(Interrupted once the cell says it runs: a 1-s timer's ``interrupt()``, which does nothing
    with no cell running, came before the cell was sent when the test was held up that long.)"""
    started = CellStarted()
    kernel = kernel_factory(tools=started.tools())
    kernel.execute("y = 5")
    pid = kernel.pid
    cell = run_in_thread(kernel, started.CODE + "import time\ntime.sleep(30)")
    started.wait(30)
    kernel.interrupt()
    r = cell.result(timeout=60)

    assert r.status == "interrupted" and r.ename == "KeyboardInterrupt", r.summary()
    assert r.duration_s < 5.0 and r.watchdog is None
    after = kernel.execute("y")
    assert after.value == "5" and after.kernel.pid == pid and not after.kernel.state_lost


def test_interrupt_while_idle_is_harmless(kernel):
    kernel.execute("w = 3")
    kernel.interrupt()
    assert kernel.execute("w").value == "3"


def test_shutdown_reports_how_the_kernel_ended(kernel_factory):
    k = kernel_factory()
    locator = k.transport.locator(k.launched)

    info = k.shutdown()

    assert info.step == "request" and info.exit_code == 0 and info.confirmed
    assert k.transport.kernel_processes(k.kernel_id, locator) == [], "nothing of the kernel may be left"
    assert k.shutdown() == info  # idempotent


def test_a_killed_kernels_dir_is_removed_at_shutdown(kernel_factory):
    """A kernel dir on this machine (its ``Launched.kernel_dir``) is gone once the kernel is shut
    down, also when its runner was killed and could not remove it itself: a transport whose
    ``cleanup`` left every such dir (runner file, log) passed the suite, the leak check knowing
    only the kit's own kernel dir roots. Elsewhere it is the transport's ``leak_snapshot`` that
    reports one left (``remote kernel dir``)."""
    k = kernel_factory()
    kdir = k.launched.kernel_dir if k.launched is not None else None
    if not (k.transport.runs_on_this_host and kdir and os.path.isdir(kdir)):
        pytest.skip(f"the {k.transport.name} transport's kernel dir is not on this machine")
    assert k.transport.kill(k.launched), "the transport must see its runner gone after kill()"

    k.shutdown()

    wait_until(lambda: not os.path.exists(kdir), KILLED_GONE_S,
               what=f"the kernel dir {kdir} of a killed runner to be removed by shutdown() (Transport.cleanup "
                    f"removes what the launch made)")


def test_the_launched_pid_is_the_runners_own(kernel):
    """``Launched.pid`` is the runner's own pid where the kernel runs (the worker's parent, as a cell
    sees it): ``kill``, ``alive`` and the leak checks go by it. A launch that put a wrapper in front
    of the runner that forks it and exits (``setsid`` run from a process that leads its group: a
    ``Popen(..., start_new_session=True)``) gave the wrapper's pid: six cases failed, none naming it."""
    parent = int(kernel.execute("import os\nos.getppid()").value)

    assert parent == kernel.launched.pid, (
        f"Launched.pid is {kernel.launched.pid}, but the kernel runner (its worker's parent, seen from a cell) is "
        f"pid {parent}: the launch returned the pid of another process, e.g. a wrapper that forks the runner and "
        "exits (setsid in a new session, a shell that does not exec); kill(), alive() and the leak checks then look "
        "at that process, not the runner")


def test_a_runner_is_seen_gone_only_once_it_ended(kernel):
    """``Transport.seen_gone`` is the core's only proof that a runner ended (the watchdog's reset,
    a runner started in place of a lost one, a ``confirmed`` shutdown): ``False`` while it runs,
    ``True`` once the transport killed it; ``alive()`` (what a lost channel's note says of the
    runner) answers the other way round. (``False`` also when the transport cannot tell: a
    backend whose ``alive()`` may say ``False`` then overrides it; see the port's docstring.)"""
    transport, launched = kernel.transport, kernel.launched
    assert kernel.execute("1 + 1").value == "2"

    assert not transport.seen_gone(launched), "a running runner must not be seen gone"
    assert transport.alive(launched), "alive() must say True for a runner that runs (and answers)"
    assert transport.kill(launched), "the transport must see its runner gone after kill()"
    assert transport.seen_gone(launched), "a runner the transport killed must be seen gone"
    assert not transport.alive(launched), ("alive() must say False for a runner the transport killed (a lost "
                                           "kernel's note said 'runner still alive; killed')")
    info = kernel.shutdown()
    assert info.confirmed, info


def test_the_transport_lists_every_process_of_its_kernel(kernel):
    """Every check of this suite that a process is gone (a restart's old worker, a shutdown that
    leaves nothing) reads ``Transport.kernel_processes``: one that misses the kernel's processes
    (an empty list) passes them all. It lists the runner, the worker and what a cell started."""
    child = int(kernel.execute(START_CHILD).value)
    try:
        _all_listed(kernel, {"the runner": kernel.runner_pid, "the worker": kernel.pid, "a cell's child (sleep 30)": child})
    finally:
        kernel.execute("child.kill(); child.wait()")


def _all_listed(kernel, wanted: dict[str, int | None]) -> None:
    """Wait until ``Transport.kernel_processes`` lists every pid of ``wanted`` (what -> pid), or fail
    naming those it does not. (A process just started may show no environment for a moment: its
    exec is still setting its new image up after ``Popen`` returned.)"""
    missing: dict[str, int | None] = {}
    seen: set[int] = set()

    def listed() -> bool:
        seen.clear()
        seen.update(kernel_pids(kernel))
        missing.clear()
        missing.update({what: pid for what, pid in wanted.items() if pid not in seen})
        return not missing

    try:
        wait_until(listed, LISTED_S, what="the kernel's processes to be listed")
    except AssertionError:
        raise AssertionError(f"Transport.kernel_processes does not list {missing} (it listed pids {sorted(seen)}): it must "
                             "list every live process of the kernel where it runs (each carries HERMES_KERNEL_ID in its "
                             "environment), or raise TransportLostError when it cannot look, never answer a short list"
                             ) from None


def test_kill_ends_every_process_of_the_kernel(kernel):
    """``Transport.kill`` is the last resort of the watchdog and of a shutdown: it ends the runner's
    whole process tree, the worker and what its cells started included, not the runner alone."""
    child = int(kernel.execute(START_CHILD).value)
    transport, launched = kernel.transport, kernel.launched
    pids = {kernel.runner_pid, kernel.pid, child}
    _all_listed(kernel, {"the runner": kernel.runner_pid, "the worker": kernel.pid, "a cell's child (sleep 30)": child})

    assert transport.kill(launched), "the transport must see its runner gone after kill()"

    left = lambda: pids & kernel_pids(kernel)  # noqa: E731
    try:
        wait_until(lambda: not left(), KILLED_GONE_S, what="every process of the killed kernel to be gone")
    except AssertionError:
        raise AssertionError(f"Transport.kill left processes of the kernel running: pids {sorted(left())} of "
                             f"{sorted(pids)} (runner, worker, a cell's sleep 30): it must end the runner's whole "
                             "process tree (e.g. its session or process group), not only the runner") from None
    if transport.runs_on_this_host:  # seen in this machine's own process table too, not only by the transport
        here = processes_with_env("HERMES_KERNEL_ID", kernel.kernel_id)
        assert not here, f"Transport.kill left processes of the kernel on this machine: {here}"
    assert kernel.shutdown().confirmed


def test_an_interrupt_of_a_cell_that_has_ended_does_not_reach_the_next_cell(kernel_factory):
    # interrupt() took the running cell just before it ended and sent its interrupt only after
    # the next cell was sent (its thread preempted in between): the runner must apply it to the
    # cell it names, never to whichever cell runs when it arrives
    held, started = [], threading.Event()
    kernel = kernel_factory(tools={"hold": lambda: held.append(kernel._cell), "started": started.set})
    kernel.execute("import hermes_tools\nhermes_tools.hold()\nkept = 'yes'")
    [ended] = held
    results = []
    cell = threading.Thread(target=lambda: results.append(kernel.execute(
        "import hermes_tools, time\nhermes_tools.started()\ntime.sleep(1.0)\nkept")))
    cell.start()
    assert started.wait(30), "the next cell never started"

    ended.interrupt()
    cell.join(30)

    [result] = results
    assert result.status == "ok" and result.value == "'yes'", result.summary()


def test_cells_run_in_the_working_dir_given_and_keep_it_after_a_restart(kernel_factory):
    """``KernelOptions.cwd`` (``LaunchSpec.cwd``, and ``cwd`` in the runner's config) is where cells
    and what they start run; ``/`` is a dir that exists wherever a kernel runs. A transport that
    drops it runs every cell in its kernel dir, and files a user reads by a relative name are not found."""
    k = kernel_factory(cwd="/")
    probe = "import os, subprocess\n(os.getcwd(), subprocess.run(['pwd'], capture_output=True, text=True).stdout)"

    first = k.execute(probe)
    k.restart()
    again = k.execute(probe)

    for r in (first, again):
        assert r.status == "ok" and r.value == repr(("/", "/\n")), (
            f"cells ran in {r.value} (os.getcwd(), a child's pwd), not in the kernel's cwd '/': {r.summary()}")
