"""``hermes-kernel exec`` and ``attach`` given a cell that cannot be sent (a byte that is no UTF-8,
a line over the frame limit): the cell fails, saying why, and the console goes on with its next
line. The command ended as if the kernel could not be reached (exit status 2, the rest of the
console's input dropped), or in a ``FrameTooLargeError`` traceback."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.plugin.test_keep_failed import CLI_TIMEOUT_S, FAILING_TEST, kept_env, kept_kernel  # noqa: F401
from tests.support import gone

UNSENDABLE = "nothing was sent, the kernel is untouched"


def hermes_bytes(*args: str | bytes, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``hermes-kernel ARGS`` with raw bytes in (an argument or input that is no UTF-8)."""
    return subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", *args], input=stdin,
                          capture_output=True, timeout=CLI_TIMEOUT_S, env=dict(os.environ))


def test_a_console_line_that_is_no_utf8_fails_its_cell_and_the_console_goes_on(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)

    console = hermes_bytes("attach", kid, stdin=b"note = 'caf\xe9'\nevidence\n")

    assert console.returncode == 1, console.stderr  # a cell failed; 2 says the kernel cannot be reached
    assert console.stdout == b"'what went wrong'\n", console.stderr
    assert UNSENDABLE.encode() in console.stderr and b"Traceback" not in console.stderr
    assert not gone(pid)


def test_a_console_line_over_the_frame_limit_fails_its_cell_and_the_console_goes_on(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)

    console = hermes_bytes("attach", kid, stdin=b"#" + b"x" * (65 * 2**20) + b"\nevidence\n")

    assert console.returncode == 1, console.stderr[-2000:]
    assert console.stdout == b"'what went wrong'\n", console.stderr[-2000:]
    assert b"frame limit" in console.stderr and b"Traceback" not in console.stderr, console.stderr[-2000:]
    assert not gone(pid)


def test_exec_of_a_cell_that_cannot_be_sent_exits_1_not_as_if_the_kernel_were_unreachable(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)

    bad = hermes_bytes("exec", kid, b"note = 'caf\xe9'")

    assert bad.returncode == 1 and bad.stdout == b"", bad.stderr
    assert UNSENDABLE.encode() in bad.stderr and b"Traceback" not in bad.stderr
    after = hermes_bytes("exec", kid, "evidence")
    assert (after.returncode, after.stdout) == (0, b"'what went wrong'\n"), after.stderr
    assert not gone(pid)
