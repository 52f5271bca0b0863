"""``hermes-kernel attach ID <&-`` and ``exec ID CODE >&-``: started with its stdin or stdout
closed (a service unit, a cron line, a script's ``exec <&-``), the command treats the closed
stream as empty (no input: the console leaves at once) or as a sink (the cell's output goes
nowhere), and the kernel stays kept. Each ended in an ``AttributeError: 'NoneType' object has no
attribute ...`` traceback after it had attached (Python starts with ``sys.stdin``/``sys.stdout``
``None`` then)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.plugin.test_keep_failed import CLI_TIMEOUT_S, FAILING_TEST, hermes, kept_env, kept_kernel  # noqa: F401
from tests.support import gone


def _hermes_with_closed(fd: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``hermes-kernel ARGS`` started with file descriptor ``fd`` closed; its stderr."""
    streams = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL}
    streams.pop(["stdin", "stdout"][fd])
    return subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", *args], stderr=subprocess.PIPE,
                          text=True, timeout=CLI_TIMEOUT_S, env=dict(os.environ), preexec_fn=lambda: os.close(fd),
                          **streams)


def test_attach_with_its_stdin_closed_leaves_at_once_and_keeps_the_kernel(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)

    console = _hermes_with_closed(0, "attach", kid)

    assert (console.returncode, console.stderr) == (0, ""), console.stderr
    after = hermes("exec", kid, "evidence")
    assert (after.returncode, after.stdout) == (0, "'what went wrong'\n"), after.stderr
    assert not gone(pid)


def test_exec_with_its_stdout_closed_runs_the_cell_and_keeps_the_kernel(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)

    done = _hermes_with_closed(1, "exec", kid, "seen = evidence.upper(); print(seen); seen")

    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    after = hermes("exec", kid, "seen")
    assert (after.returncode, after.stdout) == (0, "'WHAT WENT WRONG'\n"), after.stderr
    assert not gone(pid)
