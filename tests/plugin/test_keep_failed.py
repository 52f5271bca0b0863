"""--hermes-keep-failed: a failed test's kernel outlives pytest for post-mortem (issue 12, point 2).

Each test runs pytest in a subprocess, lets it exit, then reaches what it kept the way a user
does: ``hermes-kernel ls``, ``exec``, ``attach`` and ``sweep --kept`` in subprocesses. Both run
with ``TMPDIR`` on a private directory of the test (:func:`kept_env`), so the kept records and
kernel dirs are that test's alone; its finalizer ends whatever was kept, pass or fail.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import gone, pids_with_kernel_id, stays_true, wait_until

FAILING_TEST = """
from pathlib import Path

def test_fails(hermes_kernel):
    hermes_kernel.execute("evidence = 'what went wrong'")
    Path("kernel.json").write_text('{"id": "%s", "pid": %d}' % (hermes_kernel.kernel_id, hermes_kernel.pid))
    assert False, "deliberate failure"
"""

LATER_TEST = """
import psutil

def test_later_in_the_same_session():
    import json
    from pathlib import Path
    worker = psutil.Process(json.loads(Path("kernel.json").read_text())["pid"])  # NoSuchProcess if shut down
    assert worker.status() != psutil.STATUS_ZOMBIE
"""

CLI_TIMEOUT_S = 60.0
#: Inner runs with a deliberate leak: it is reported after this long of re-checks (the default 3 s is
#: for reaping under load; nothing these runs leak ends by itself).
LEAK_GRACE = "--hermes-leak-grace=0.5"


@pytest.fixture
def kept_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private ``TMPDIR`` for the inner run and the CLI; afterwards every kernel kept there ends."""
    tmp = Path(tempfile.mkdtemp(prefix="hk-", dir="/tmp"))  # short: a unix socket path has 108 bytes
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.delenv("PYTEST_HERMES_KERNEL_DIR", raising=False)
    yield tmp
    hermes("sweep", "--kept")
    shutil.rmtree(tmp, ignore_errors=True)


ORPHAN_SWEEP_IS_MACHINE_WIDE = """``hermes-kernel sweep kernel-processes`` kills every local kernel process whose host is
gone, on the whole machine: run for real here, it also killed what a concurrent test checks
survives its SIGKILLed host (under -n 4, the README's leak walkthrough then passed with its bug
in). Tests list what it would kill (``--dry-run``, the same selection) instead."""


def hermes(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``hermes-kernel ARGS`` in a subprocess, in this process's environment (``TMPDIR`` included)."""
    return subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", *args], input=stdin,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S, env=dict(os.environ),
                          stdin=None if stdin is not None else subprocess.DEVNULL, cwd=cwd)


def kept_kernel(pytester: pytest.Pytester) -> tuple[str, int]:
    facts = json.loads(Path(pytester.path, "kernel.json").read_text())
    return facts["id"], facts["pid"]


def records(tmp: Path) -> list[str]:
    kept = tmp / f"pytest-hermes-kernel-{os.getuid()}" / "kept"
    return sorted(p.stem for p in kept.glob("*.json")) if kept.exists() else []


def kernel_dirs(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.glob("hermes-kernel-*") if not p.name.startswith("hermes-kernel-server-"))


def test_a_failed_tests_kernel_outlives_pytest_and_the_cli_reaches_it(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST)

    result = run("--hermes-keep-failed")

    result.assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)
    result.stdout.fnmatch_lines([
        "hermes-kernel: transports=local * keep-failed",
        f"kept for post-mortem: test_keep.py::test_fails[[]local[]]: kernel {kid} on local (worker pid {pid}, "
        "runner pid *); it ends by itself 3600 s after its last client leaves (at *",
        f"    *hermes-kernel exec {kid} *",
        f"    *hermes-kernel attach {kid} *",
        "    *hermes-kernel ls *",
        f"    *hermes-kernel sweep --kept --kernel {kid} *",
    ])
    assert "leaked" not in result.stdout.str()  # a kept kernel is not a leak
    assert stays_true(lambda: not gone(pid), 1.0), "the kept kernel must outlive the pytest process"
    record = kept_env / f"pytest-hermes-kernel-{os.getuid()}" / "kept" / f"{kid}.json"
    assert record.stat().st_mode & 0o777 == 0o600 and record.parent.stat().st_mode & 0o777 == 0o700

    ls = hermes("ls")
    assert ls.returncode == 0 and kid in ls.stdout, ls.stdout + ls.stderr
    line = next(x for x in ls.stdout.splitlines() if x.startswith(kid))
    assert line.split()[1:3] == ["local", "runner"] and " yes " in line and "test_keep.py::test_fails[local]" in line
    assert hermes("ls", "--ids", "--test", "test_keep.py::test_fails").stdout == f"{kid}\n"  # the README's way
    assert hermes("ls", "--ids", "--test", "test_other.py").stdout == ""
    above = pytester.path.parent  # pytest run from there prints <dir>/test_keep.py::test_fails[local]
    assert hermes("ls", "--ids", "--test", f"{pytester.path.name}/test_keep.py::test_fails", cwd=above).stdout == f"{kid}\n"
    for bad in ("", "0000"):  # a script whose lookup found nothing, or another id: nothing is ended
        refused = hermes("sweep", "--kept", "--kernel", bad)
        assert refused.returncode == 2 and "--kernel:" in refused.stderr and kid in hermes("ls").stdout, refused.stderr

    shown = hermes("exec", kid, "evidence")
    assert (shown.returncode, shown.stdout) == (0, "'what went wrong'\n"), shown.stderr
    failed = hermes("exec", kid[:8], "1/0")  # a unique prefix names it too
    assert failed.returncode == 1 and "ZeroDivisionError: division by zero" in failed.stderr

    console = hermes("attach", kid, stdin="n = len(evidence)\nprint('n is', n)\nimport sys; print('e', file=sys.stderr)\nn\n")
    assert console.returncode == 0, console.stderr
    assert console.stdout == "n is 15\n15\n" and console.stderr == "e\n"
    assert hermes("exec", kid, "n").stdout == "15\n"  # state kept across attaches

    swept = hermes("sweep", "--kept")
    assert swept.returncode == 0 and f"removed kept kernel {kid}" in swept.stdout, swept.stdout + swept.stderr
    wait_until(lambda: gone(pid) and not pids_with_kernel_id(kid), 10.0, what=f"kept kernel {kid} to end")
    assert records(kept_env) == [] and kernel_dirs(kept_env) == []
    assert kid not in hermes("ls").stdout
    gone_now = hermes("exec", kid, "evidence")
    assert gone_now.returncode == 2 and f"no kept kernel {kid!r}" in gone_now.stderr


def test_a_kept_kernel_ends_by_its_own_timer_when_its_ttl_runs_out(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST)

    result = run("--hermes-keep-failed", "--hermes-keep-failed-ttl", "2")

    result.assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)
    result.stdout.fnmatch_lines([f"kept for post-mortem: * kernel {kid} * it ends by itself 2 s after *"])
    wait_until(lambda: gone(pid) and not pids_with_kernel_id(kid), 15.0, what=f"kept kernel {kid} to expire")
    wait_until(lambda: kernel_dirs(kept_env) == [], 5.0, what="the expired kernel's dir to go")
    line = next(x for x in hermes("ls").stdout.splitlines() if x.startswith(kid))
    assert " expired " in line and line.split()[-2] == "no", line

    swept = hermes("sweep", "kept")  # the plain sweep removes records of expired kept kernels
    assert f"removed kept kernel {kid}" in swept.stdout and records(kept_env) == []


def test_a_kept_kernel_with_a_ttl_of_weeks_lives_and_its_expiry_shows_its_date(pytester, run, kept_env):
    """A TTL over 24.8 days (epoll's most, INT_MAX ms) raised OverflowError in the runner's loop
    once kept: the kernel the summary listed as kept was dead (``ls``: alive no), and its expiry
    read as a time of today. A TTL past what the clock can show errored the test's teardown."""
    pytester.makepyfile(test_keep=FAILING_TEST)

    result = run("--hermes-keep-failed", "--hermes-keep-failed-ttl", "3000000")
    beyond = run("--hermes-keep-failed", "--hermes-keep-failed-ttl", "1e300")

    result.assert_outcomes(failed=1)
    beyond.assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)  # the second run's
    result.stdout.fnmatch_lines(["kept for post-mortem: * 3e+06 s after its last client leaves (at ????-??-?? ??:??:?? if *"])
    beyond.stdout.fnmatch_lines([f"kept for post-mortem: * kernel {kid} * (at a time past what this machine's clock can show *"])
    assert stays_true(lambda: not gone(pid), 1.0), "the kept kernel must outlive the pytest process"
    for kept in records(kept_env):
        assert hermes("exec", kept, "evidence").stdout == "'what went wrong'\n"


def test_later_sweeps_leave_an_unexpired_kept_kernel_alone(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)

    swept = hermes("sweep", "kernel-dirs", "kept")  # its host is gone: still not a leftover
    would_kill = hermes("sweep", "--dry-run", "kernel-processes")  # see ORPHAN_SWEEP_IS_MACHINE_WIDE

    for out in (swept, would_kill):
        assert out.returncode == 0 and str(pid) not in out.stdout and kid not in out.stdout, out.stdout
    assert not gone(pid) and records(kept_env) == [kid] and len(kernel_dirs(kept_env)) == 1
    assert hermes("exec", kid, "evidence").stdout == "'what went wrong'\n"


def test_a_passing_test_keeps_nothing(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST.replace('assert False, "deliberate failure"', "pass"))

    result = run("--hermes-keep-failed")

    result.assert_outcomes(passed=1)
    kid, pid = kept_kernel(pytester)
    assert "kept for post-mortem" not in result.stdout.str()
    wait_until(lambda: gone(pid), 5.0, what="the passing test's kernel to be shut down")
    assert records(kept_env) == [] and kernel_dirs(kept_env) == [] and not pids_with_kernel_id(kid)


def test_a_host_sigkilled_before_the_switch_takes_its_kernel_along(pytester, run, kept_env):
    """The switch happens at the failed test's teardown: until then the channel is the lease."""
    pytester.makepyfile(test_keep=FAILING_TEST.replace(
        'assert False, "deliberate failure"', "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))

    result = run("--hermes-keep-failed")

    assert result.ret == -9, result.stdout.str()
    kid, pid = kept_kernel(pytester)
    wait_until(lambda: gone(pid) and not pids_with_kernel_id(kid), 5.0, what="the kernel to die with its host")
    assert records(kept_env) == []
    assert "removed kept kernel" not in hermes("sweep", "--kept").stdout


def test_the_leak_check_still_catches_what_else_the_failed_test_left(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST.replace(
        'assert False, "deliberate failure"',
        'import subprocess; subprocess.Popen(["sleep", "300"]); assert False, "deliberate failure"'))

    result = run("--hermes-keep-failed", "--hermes-leak-check=error", LEAK_GRACE)

    result.assert_outcomes(failed=1, errors=1)
    kid, pid = kept_kernel(pytester)
    text = result.stdout.str()
    assert "sleep 300" in text and "LeakError" in text, text
    assert kid not in text.split("LeakError", 1)[1].split("\n\n", 1)[0]  # the kept kernel is not named a leak
    assert not gone(pid) and records(kept_env) == [kid]


def test_without_the_flag_a_failed_tests_kernel_is_shut_down(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST, test_later=LATER_TEST)

    result = run()

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["FAILED test_later.py::test_later_in_the_same_session - psutil.NoSuchProcess*"])
    assert "kept for post-mortem" not in result.stdout.str() and records(kept_env) == []


def _listed_and_reachable(pytester, result) -> None:
    """The run's summary names the kept kernel of ``test_fails`` and it answers ``hermes-kernel exec``."""
    kid, pid = kept_kernel(pytester)
    result.stdout.fnmatch_lines([f"kept for post-mortem: test_keep.py::test_fails[[]local[]]: kernel {kid} *",
                                 f"    *hermes-kernel exec {kid} *"])
    assert not gone(pid) and hermes("exec", kid, "evidence").stdout == "'what went wrong'\n"


def test_under_xdist_the_controller_lists_kernels_kept_by_workers(pytester, run, kept_env):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_keep=FAILING_TEST)

    result = run("-n", "1", "--hermes-keep-failed")

    result.assert_outcomes(failed=1)
    _listed_and_reachable(pytester, result)


def test_under_xdist_a_kernel_kept_by_a_worker_that_crashed_later_is_still_listed(pytester, run, kept_env):
    # the worker's list of kept kernels went down with it: the run said nothing of a kernel left alive for an hour
    pytest.importorskip("xdist")
    pytester.makepyfile(test_keep=FAILING_TEST + "\n\ndef test_then_crashes():\n    import os\n    os._exit(1)\n")

    result = run("-n", "1", "--hermes-keep-failed")

    result.assert_outcomes(failed=2)
    _listed_and_reachable(pytester, result)


def test_a_second_command_on_a_kept_kernel_in_use_is_refused_and_the_kernel_survives(pytester, run, kept_env):
    """``hermes-kernel attach`` open in one terminal, ``exec`` in another: the second attach took
    the runner's one client link from the first, whose next cell then saw its stream end, read it
    as the kernel's death and killed the kept runner: the post-mortem evidence was gone. A command
    on a kernel that another command holds is refused now (exit 2, naming the holder)."""
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)
    with subprocess.Popen([sys.executable, "-m", "pytest_hermes_kernel.cli", "attach", kid], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)) as console:
        try:
            console.stdin.write("evidence\n")
            console.stdin.flush()
            assert console.stdout.readline() == "'what went wrong'\n"  # attached, and idle now

            second = hermes("exec", kid, "evidence = 'overwritten'")

            assert second.returncode == 2, second.stdout + second.stderr
            assert f"kept kernel {kid} is in use by another hermes-kernel command (pid {console.pid})" in second.stderr
            console.stdin.write("evidence\n")
            console.stdin.flush()
            assert console.stdout.readline() == "'what went wrong'\n"
            console.stdin.close()
            assert console.wait(timeout=CLI_TIMEOUT_S) == 0, console.stderr.read()
        finally:
            if console.poll() is None:
                console.kill()
    assert not gone(pid)
    after = hermes("exec", kid, "evidence")
    assert (after.returncode, after.stdout) == (0, "'what went wrong'\n"), after.stderr


def _exec_in_background(kid: str, started: Path) -> subprocess.Popen[str]:
    """``hermes-kernel exec KID`` of a cell that never ends, once the cell runs (it makes ``started``)."""
    code = f"import time; open({str(started)!r}, 'w').close()\nwhile True: time.sleep(0.05)"
    command = subprocess.Popen([sys.executable, "-m", "pytest_hermes_kernel.cli", "exec", kid, code],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    wait_until(started.exists, 20.0, what="the runaway cell to start")
    return command


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_exec_ended_by_a_signal_interrupts_its_cell_and_the_kernel_takes_the_next_command(pytester, run, kept_env,
                                                                                          sig):
    """A CI step's timeout (SIGTERM) or a closed terminal (SIGHUP) ended ``hermes-kernel exec`` at
    once and left its runaway cell running in the kept kernel, which refused every later
    ``exec`` and ``attach`` cell until it ended (never, for this one). The signal interrupts the
    cell now, as Ctrl-C does; the command prints its result and exits 128 + N."""
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, _ = kept_kernel(pytester)
    command = _exec_in_background(kid, pytester.path / "started")

    command.send_signal(sig)

    out, err = command.communicate(timeout=CLI_TIMEOUT_S)
    assert command.returncode == 128 + sig and "status=interrupted" in err, (out, err)
    after = hermes("exec", kid, "evidence")
    assert (after.returncode, after.stdout) == (0, "'what went wrong'\n"), after.stderr


def test_a_cell_the_kept_kernel_refuses_says_why(pytester, run, kept_env):
    """A command SIGKILLed mid-cell leaves its cell running in the kept kernel; the runner refuses
    the next command's cell with an ``error`` frame ('a cell is already running on this kernel'),
    which the host read as a result with no error: ``exec`` printed 'None: None' and exit 1."""
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, _ = kept_kernel(pytester)
    command = _exec_in_background(kid, pytester.path / "started")
    command.kill()
    command.communicate(timeout=CLI_TIMEOUT_S)

    refused = hermes("exec", kid, "evidence")

    assert refused.returncode == 1 and refused.stdout == "", refused.stdout
    assert refused.stderr == ("RunnerError: the kernel runner refused the cell, which did not run: a cell is already "
                              "running on this kernel\n")


def _sigint_as_python_sets_it() -> None:
    """In the child: SIGINT at its default, so Python raises ``KeyboardInterrupt`` on it (a run
    started as a background job, ``cmd &``, inherits it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_at_the_attach_prompt_says_so_in_one_line_and_exits_130(pytester, run, kept_env):
    """Ctrl-C at ``hermes-kernel attach``'s prompt (no cell running) ended the command with a
    ``KeyboardInterrupt`` traceback; it says so in one line now and exits 130 (128 + SIGINT),
    the kernel kept."""
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)
    with subprocess.Popen([sys.executable, "-m", "pytest_hermes_kernel.cli", "attach", kid], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                          preexec_fn=_sigint_as_python_sets_it) as console:
        try:
            console.stdin.write("evidence\n")
            console.stdin.flush()
            assert console.stdout.readline() == "'what went wrong'\n"  # attached, and at the prompt

            console.send_signal(signal.SIGINT)

            code = console.wait(timeout=CLI_TIMEOUT_S)  # stdin open: an EOF must not end it first
            out, err = console.stdout.read(), console.stderr.read()
        finally:
            if console.poll() is None:
                console.kill()
    assert (code, out) == (130, ""), err
    assert err == f"hermes-kernel: interrupted at the prompt; kernel {kid} stays kept\n"
    assert not gone(pid)
    after = hermes("exec", kid, "evidence")
    assert (after.returncode, after.stdout) == (0, "'what went wrong'\n"), after.stderr


def test_a_kept_kernel_whose_worker_died_is_reported_at_the_next_command_not_replaced(pytester, run, kept_env):
    """Found by a breaker helper: after a command's cell ended the kept kernel's worker, the next
    command attached, started a fresh worker unseen and ran its cell there (a bare NameError,
    ``state_lost=False``), though the CLI starts no worker of its own (``auto_restart=False``)."""
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, _ = kept_kernel(pytester)

    died = hermes("exec", kid, "import os; os._exit(4)")
    assert died.returncode == 1 and "exited with code 4" in died.stderr, died.stderr
    after = hermes("exec", kid, "evidence")

    assert after.returncode == 1 and after.stdout == "", after.stdout
    assert "NameError" not in after.stderr, after.stderr
    assert after.stderr == (f"[kernel {kid}: the kept kernel's worker had ended before this attach (exit code 4); its "
                            "state is gone and nothing was run (this command starts no new worker): end it with "
                            f"`hermes-kernel sweep --kept --kernel {kid}`]\n")


FILECELL_KEPT = """
import os
PIDS = {}

def test_fails(hermes_kernel):
    PIDS["runner"], PIDS["worker"] = hermes_kernel.runner_pid, hermes_kernel.worker_pid
    hermes_kernel.execute("kept_var = 41")
    assert hermes_kernel.execute("kept_var").value == "42", "deliberate failure"

def test_later_in_the_same_session():
    assert PIDS and all(os.path.exists(f"/proc/{pid}") for pid in PIDS.values()), PIDS
"""


def test_a_kernel_kept_until_the_session_ends_is_no_leak(pytester, run, kept_env):
    """Found by a CI-user helper: a failed test's filecell kernel, which cannot outlive the session
    and is kept until it ends, was reported as a leak (its backend's subreaper as a ``child
    process``, its kernel dir as a ``kernel dir``): with ``--hermes-leak-check=error`` its test
    errored at teardown, and the kernel was in fact still alive for the next test."""
    pytester.makepyfile(test_keep=FILECELL_KEPT)

    result = run("--hermes-keep-failed", "--hermes-transport=filecell", "--hermes-leak-check=error")

    result.assert_outcomes(failed=1, passed=1)
    assert "leaked" not in result.stdout.str(), result.stdout.str()
    result.stdout.fnmatch_lines(["kept for post-mortem: test_keep.py::test_fails[[]filecell[]]: kernel * (shut down at "
                                 "session end: it cannot outlive it: the filecell transport keeps no kernel past the "
                                 "session (Transport.keepable is False))"])


FILECELL_KEPT_AND_A_LEAKED_FD = """
import os

def test_fails(hermes_kernel):
    hermes_kernel.execute("x = 1")
    os.open(hermes_kernel.launched.kernel_dir, os.O_RDONLY)  # leaked: never closed
    assert False, "deliberate failure"
"""


def test_what_else_a_test_left_is_still_a_leak_beside_a_kernel_kept_until_the_session_ends(pytester, run, kept_env):
    """A third breaker helper: the kept kernel's exemption matched any key ending with its kernel
    dir, so an fd the test leaked on that dir went unreported."""
    pytester.makepyfile(test_keep=FILECELL_KEPT_AND_A_LEAKED_FD)

    result = run("--hermes-keep-failed", "--hermes-transport=filecell", "--hermes-leak-check=error", LEAK_GRACE)

    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*leaked fd: fd * -> /tmp/hermes-filecell-*/k-*"])
    assert "leaked kernel dir" not in result.stdout.str() and "leaked child process" not in result.stdout.str()


def test_a_failed_oom_tests_kernel_is_kept_alive_until_the_session_ends(pytester, run, kept_env):  # type: ignore[no-untyped-def]
    """``hermes_oom`` on local runs the kernel in a memory cgroup the run makes, and removing the
    group kills what is in it: the summary said the kernel was kept past pytest (``hermes-kernel
    exec ...``) while its worker had been SIGKILLed at the test's teardown (``exec`` found it
    ended, signal 9). It is kept until the session ends, and the summary says so."""
    oom_failing = FAILING_TEST.replace("def test_fails", "import pytest\n\n@pytest.mark.hermes_oom(limit_bytes=256 * 2**20)\n"
                                       "def test_fails", 1)
    pytester.makepyfile(test_a_fails=oom_failing, test_b_later=LATER_TEST)
    result = run("--hermes-transport=local", "--hermes-keep-failed", "-p", "no:randomly")
    result.assert_outcomes(failed=1, passed=1)
    kernel_id, pid = kept_kernel(pytester)
    result.stdout.fnmatch_lines([f"kept for post-mortem: *test_fails*: kernel {kernel_id} worker pid {pid} * "
                                 "(shut down at session end: it cannot outlive it: its memory cgroup (hermes_oom) "
                                 "is removed at the run's end, and the kernel with it)"])
    assert records(kept_env) == []


SLOW_LATER_TEST = """
import time
from pathlib import Path

def test_later_outlasts_the_ttl():
    from pytest_hermes_kernel.containers.kept import load_all
    deadline = time.monotonic() + 60
    while not all(r.expired() for r in load_all()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert load_all() and all(r.expired() for r in load_all())
"""


def test_a_kernel_whose_ttl_ran_out_before_the_runs_end_is_not_offered(pytester: pytest.Pytester, run,
                                                                         kept_env: Path) -> None:
    """A kept kernel whose TTL ran out while later tests ran has ended by the summary: the summary said
    ``it ends by itself 2 s after its last client leaves (at T if none comes)``, T already past, and
    listed ``hermes-kernel exec ID 'dir()'``, which then said ``expired``, exit status 2 (a long suite
    with the default 3600 s TTL and an early failure: the same). It says the kernel has ended now."""
    pytester.makepyfile(test_a_fails=FAILING_TEST, test_b_later=SLOW_LATER_TEST)
    result = run("-p", "no:randomly", "--hermes-keep-failed", "--hermes-keep-failed-ttl=2")
    result.assert_outcomes(passed=1, failed=1)
    kid, _ = kept_kernel(pytester)
    out = result.stdout.str()
    entry = out[out.index(f"kernel {kid} on local"):]
    assert "it has ended already: " in entry and f"kernel {kid} expired at " in entry, out
    assert f"hermes-kernel exec {kid}" not in out and "if none comes" not in out, out
    said = hermes("exec", kid, "dir()")
    assert said.returncode == 2 and "expired" in said.stderr, said  # what the summary says is so


@pytest.mark.parametrize("on_path", [False, True])
def test_the_summarys_commands_work_as_typed(pytester: pytest.Pytester, run, kept_env: Path,
                                            monkeypatch: pytest.MonkeyPatch, on_path: bool) -> None:
    """Each command the summary lists for a kept kernel runs as typed, in a shell with the run's ``PATH``.
    A run started as ``.venv/bin/python -m pytest`` with the venv not activated listed ``hermes-kernel
    exec ID 'dir()'``, which the shell answered with ``hermes-kernel: not found`` (exit status 127): it
    names the script by its path there, and by its name where the ``PATH`` finds it."""
    bindir = os.path.dirname(sys.executable)
    assert os.access(os.path.join(bindir, "hermes-kernel"), os.X_OK), "the kit's script beside the interpreter"
    path = [p for p in os.environ["PATH"].split(os.pathsep) if p and os.path.realpath(p) != os.path.realpath(bindir)]
    monkeypatch.setenv("PATH", os.pathsep.join([bindir, *path] if on_path else path))
    pytester.makepyfile(test_keep=FAILING_TEST)
    out = run("--hermes-keep-failed").stdout.str()
    kid, _ = kept_kernel(pytester)
    lines = {what: next(x for x in out.splitlines() if x.rstrip().endswith(what)).rsplit("    ", 1)[0].strip()
             for what in ("run one cell in it", "every kept kernel, alive or not", "end it now")}
    for what, command in lines.items():
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
                              env=dict(os.environ), stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{command!r} ({what}): exit status {done.returncode}: {done.stderr}"
        assert what != "run one cell in it" or "'evidence'" in done.stdout, done.stdout
        assert what != "end it now" or f"removed kept kernel {kid}" in done.stdout, done.stdout
    assert lines["run one cell in it"].startswith("hermes-kernel exec " if on_path else f"{bindir}/hermes-kernel exec ")


def _stubborn_exec(kid: str, started: Path, swallowed: Path) -> subprocess.Popen[str]:
    """``hermes-kernel exec KID`` of a cell that swallows every ``KeyboardInterrupt`` (noting each)."""
    code = (f"import time; open({str(started)!r}, 'w').close()\nwhile True:\n    try:\n        time.sleep(0.05)\n"
            f"    except KeyboardInterrupt:\n        open({str(swallowed)!r}, 'a').write('x')")
    command = subprocess.Popen([sys.executable, "-m", "pytest_hermes_kernel.cli", "exec", kid, code],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                               preexec_fn=_sigint_as_python_sets_it)
    wait_until(started.exists, 20.0, what="the stubborn cell to start")
    return command


@pytest.mark.parametrize("signals", [(signal.SIGINT, signal.SIGINT), (signal.SIGTERM,)], ids=["ctrl-c-twice", "sigterm"])
def test_a_cell_that_swallows_interrupts_does_not_hold_the_command_for_good(pytester, run, kept_env, signals):
    """``hermes-kernel exec`` (and ``attach``) of a cell that catches ``KeyboardInterrupt`` and goes on:
    each Ctrl-C, and a CI step's SIGTERM, only sent the cell one more interrupt, so the command never
    ended (SIGKILL then left the cell running in the kept kernel, refusing every later command). Ctrl-C
    again, or a SIGTERM unheeded for 5 s, now starts the timeout ladder: the cell is killed (state
    lost, said so), the command ends (a SIGTERM's with 143), and the kernel takes the next command."""
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, _ = kept_kernel(pytester)
    swallowed = pytester.path / "swallowed"
    command = _stubborn_exec(kid, pytester.path / "started", swallowed)
    try:
        command.send_signal(signals[0])
        wait_until(swallowed.exists, 20.0, what="the cell to swallow the first interrupt")
        for sig in signals[1:]:
            command.send_signal(sig)
        out, err = command.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        if command.poll() is None:
            command.kill()
            command.communicate()
    assert command.returncode == (143 if signal.SIGTERM in signals else 1), (out, err)
    assert "status=timeout" in err and "state lost" in err, err
    after = hermes("exec", kid, "6 * 7")
    assert (after.returncode, after.stdout) == (0, "42\n"), after.stderr
