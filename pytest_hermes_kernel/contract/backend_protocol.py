"""Contract: an execute-only backend keeps the ``ExecuteBackend`` protocol, rule by rule.

The protocol: :class:`~pytest_hermes_kernel.transports.filecell.backends.ExecuteBackend`.

A ``filecell`` transport reads only what its backend's ``execute(cmd, timeout)`` hands back,
and most of what it runs is judged by its output alone, so a backend that loses part of that
answer can still pass every kernel case of the suite while its kernels fail elsewhere: a failed
step that does not say why (stderr dropped: a traceback is there), a dead process read as alive (every status 0), a
cell's default-sized result cut short (output truncated), a poll that hangs with its command
(timeout ignored), a launch's env (secrets) shown by ``ps`` (the command in argv). These cases call the backend directly, each with a deadline, and say which
rule of the protocol it broke. They skip on transports that have no execute backend.
"""

from __future__ import annotations

import secrets
import shlex
import time
from concurrent.futures import TimeoutError as FutureTimeout

import pytest

from ..transports.filecell.backends import TIMEOUT_EXIT
from ..transports.filecell.transport import FileCellTransport
from ._probes import call_in_thread

#: Seconds a command ended at its timeout may take beyond it (a container exec, a loaded machine).
TIMEOUT_SLACK_S = 8.0
#: Bytes of output a backend must return whole: one poll can carry a cell's result at the default
#: caps (1 MiB per stream, base64: 4/3 of that, and the value), so 4 MiB.
WHOLE_OUTPUT_BYTES = 4 * 2**20
#: Seconds a call whose command left a background process holding its output may take (the
#: reference backends drain for 2 s at most; docker's own exec drain is 2 s too).
BACKGROUND_RETURN_S = 10.0
#: Seconds after a timed-out call within which a process of its command that the timeout missed
#: would show (it acts 2 s after the command started), and how long the case watches for it at most
#: (until that process is seen gone: a backend that ended it is not watched for the whole time).
MISSED_ACTS_S, WATCH_S = 2.0, 4.0
#: Statuses a command ended at its timeout may have: 124 (coreutils ``timeout``, the protocol's),
#: or 137 (128 + SIGKILL: ``timeout -s KILL`` in a container whose ``timeout`` reports the signal).
TIMEOUT_STATUSES = (TIMEOUT_EXIT, 128 + 9)

__all__ = ["execute_backend", "test_backend_returns_stdout_and_stderr", "test_backend_returns_the_exit_status",
           "test_backend_returns_the_whole_output", "test_backend_returns_the_output_unchanged",
           "test_backend_ends_a_command_at_its_timeout",
           "test_backend_ends_the_whole_command_at_its_timeout",
           "test_a_background_process_does_not_hold_the_call_open", "test_backend_runs_commands_concurrently",
           "test_a_command_is_on_no_process_command_line"]


@pytest.fixture
def execute_backend(hermes_transport):
    """The transport's execute backend; skips on transports that have none."""
    if not isinstance(hermes_transport, FileCellTransport):
        pytest.skip(f"the {hermes_transport.name} transport has no execute backend (only filecell does)")
    return hermes_transport.backend


def _run(backend, cmd: str, timeout: float = 30.0):
    """``backend.execute(cmd, timeout)``, failing the test (not hanging it) past the timeout."""
    fut = call_in_thread(backend.execute, cmd, timeout)
    try:
        result = fut.result(timeout=timeout + TIMEOUT_SLACK_S)
    except FutureTimeout:
        if fut.done():  # the backend raised a TimeoutError of its own
            raise
        raise AssertionError(f"execute({cmd!r}, timeout={timeout}) had not returned after "
                             f"{timeout + TIMEOUT_SLACK_S} s") from None
    assert isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], str), (
        f"execute({cmd!r}) returned {result!r:.200}: it must return (exit status, output text), the output "
        "decoded (UTF-8)")
    return result


@pytest.mark.parametrize("status", [0, 3], ids=["succeeded", "failed"])
def test_backend_returns_stdout_and_stderr(execute_backend, status):
    """Both streams, whatever the status: a failed command's reason is on its stderr (a shell's
    "not found", a traceback), and a backend that returns stderr only for a success passed."""
    code, out = _run(execute_backend, f"echo to-stdout; echo to-stderr >&2; exit {status}")

    assert code == status, f"execute returned exit status {code!r} for a command that exited {status}"
    assert "to-stdout" in out, f"execute lost the command's stdout (status {status}); it returned {out!r}"
    assert "to-stderr" in out, (f"execute lost the command's stderr (status {status}); it returned {out!r}. The "
                                "output must be stdout and stderr combined: a failed step's reason is on stderr")


def test_backend_returns_the_output_unchanged(execute_backend):
    """Byte for byte: a backend that strips its output (as some sandbox APIs do) passed every
    kernel case, while every leak scan through it came back unreadable; one that rewrites line
    ends (``\r\n``) failed only a background-process case, for another reason."""
    code, out = _run(execute_backend, r"printf '  lead\ttab\n\nlast line\n\n'")

    assert code == 0 and out == "  lead\ttab\n\nlast line\n\n", (
        f"execute returned {out!r} for output '  lead\\ttab\\n\\nlast line\\n\\n': the output must come back "
        "unchanged, its leading and trailing whitespace and line ends too (no strip(), no \\r\\n)")


@pytest.mark.parametrize("cmd, status", [("exit 3", 3), ("false", 1), ("exit 255", 255), ("kill -9 $$", 137)],
                         ids=["exit-3", "false", "exit-255", "sigkill"])
def test_backend_returns_the_exit_status(execute_backend, cmd, status):
    code, out = _run(execute_backend, cmd)

    assert code == status, (f"execute of {cmd!r} returned exit status {code!r}, not {status}: the status is the "
                            "shell's, 0..255, a death by signal N being 128 + N (never 0 for a failure; the "
                            f"transport reads it to tell a dead process from a live one); output {out!r}")


def test_backend_returns_the_whole_output(execute_backend, hermes_transport):
    python = shlex.quote(hermes_transport.python)
    cmd = (f"{python} -c 'import sys; sys.stdout.write(\"0123456789abcde\\n\" * {WHOLE_OUTPUT_BYTES // 16}); "
           f"sys.stdout.write(\"THE-END\\n\")'")

    code, out = _run(execute_backend, cmd, 60.0)

    size = len(out.encode("utf-8"))
    assert code == 0, f"execute returned exit status {code!r}: {out[-300:]!r}"
    assert out.rstrip("\r\n").endswith("THE-END"), (
        f"execute returned {size} bytes of a {WHOLE_OUTPUT_BYTES + 8}-byte output, not ending in its last line: "
        f"the output must come back whole (one poll carries a cell's result, up to several MiB); it ends "
        f"{out[-80:]!r}")
    assert out.count("0123456789abcde") == WHOLE_OUTPUT_BYTES // 16, f"execute returned {size} bytes: lines lost"


def test_backend_ends_a_command_at_its_timeout(execute_backend):
    """A command still running at its timeout is ended: the call raises :class:`TimeoutError` or
    returns 124 (137 where ``timeout -s KILL`` reports the signal), in about ``timeout`` seconds,
    never after the command ended by itself. A backend that ignores the timeout hangs a kernel
    with whatever command hangs."""
    fut = call_in_thread(execute_backend.execute, "sleep 20", 1.0)
    try:
        code, out = fut.result(timeout=1.0 + TIMEOUT_SLACK_S)
    except (TimeoutError, FutureTimeout):
        if fut.done():  # the backend raised TimeoutError itself: the protocol's other answer
            return
        raise AssertionError(f"execute('sleep 20', timeout=1.0) had not returned after {1.0 + TIMEOUT_SLACK_S} s: a "
                             f"backend must end the command at its timeout (raise TimeoutError or return "
                             f"{TIMEOUT_EXIT})") from None
    assert code in TIMEOUT_STATUSES, (f"execute('sleep 20', timeout=1.0) returned status {code!r} ({out!r}): a "
                                      f"command ended at its timeout returns {TIMEOUT_EXIT} (or {128 + 9}, the "
                                      "SIGKILL of `timeout -s KILL`) or raises TimeoutError")


#: Sets ``s`` to GONE when the pid in ``{pidfile}`` has ended (no such process, or a zombie, as the
#: orphan of a killed shell stays where nothing reaps it), else RUNS (no pid yet: not known to be gone).
_GONE_OR_RUNS = ("s=RUNS; p=$(cat {pidfile} 2>/dev/null)\n"
                 "if [ -n \"$p\" ]; then\n"
                 "  if ! kill -0 \"$p\" 2>/dev/null; then s=GONE\n"
                 "  elif [ -r /proc/$p/stat ] && [ \"$(sed 's/.*) //' /proc/$p/stat | cut -c1)\" = Z ]; then s=GONE; fi\n"
                 "fi")


def test_backend_ends_the_whole_command_at_its_timeout(execute_backend, hermes_transport):
    """The timeout ends every process of the command, not only its shell: ``sh -c 'sleep 2; touch
    FLAG'`` run by the command is its shell's child, and a backend that kills only the shell (as
    ``subprocess.run(["sh", "-c", cmd], timeout=...)`` does) leaves it running: it touches the
    flag after the call returned (B36's leftover descendant; a poll's client would run on). The
    case watches for the flag until the child (its pid in a file beside the flag) is seen gone,
    ``WATCH_S`` at most: once it is gone it can touch nothing."""
    flag = f"{hermes_transport.root}/timeout-{secrets.token_hex(8)}"
    pidfile = f"{flag}.pid"
    inner = shlex.quote(f"echo $$ > {shlex.quote(pidfile)}; sleep {MISSED_ACTS_S:g}; touch {shlex.quote(flag)}")
    fut = call_in_thread(execute_backend.execute, f"umask 077; mkdir -p {shlex.quote(hermes_transport.root)}; "
                                                  f"sh -c {inner}; true", 1.0)
    try:
        fut.result(timeout=1.0 + TIMEOUT_SLACK_S)
    except (TimeoutError, FutureTimeout):
        if not fut.done():
            raise AssertionError(f"the timed-out call had not returned after {1.0 + TIMEOUT_SLACK_S} s") from None
    # the child's pid first, then the flag: a child seen gone touched the flag before, or never will
    check = (f"{_GONE_OR_RUNS.format(pidfile=shlex.quote(pidfile))}\n"
             f"test -e {shlex.quote(flag)} && echo LEFT || echo none; echo $s")
    deadline = time.monotonic() + WATCH_S
    try:
        while time.monotonic() < deadline:
            code, out = _run(execute_backend, check)
            assert "LEFT" not in out, (
                "a process of a command ended at its timeout ran on after the call returned (it touched a flag "
                f"{MISSED_ACTS_S:g} s after the command started): the timeout must end the command's whole process "
                "group or session (e.g. start it with start_new_session=True and os.killpg it), not only its shell")
            assert code == 0 and "none" in out, f"the check itself failed: ({code!r}, {out!r})"
            if "GONE" in out:
                break
            time.sleep(0.2)
    finally:
        _run(execute_backend, f"rm -f {shlex.quote(flag)} {shlex.quote(pidfile)}")


def test_a_background_process_does_not_hold_the_call_open(execute_backend):
    """A command that starts a background process which inherits its output returns once the
    command itself has exited, with what it printed (B36 (a): ``echo a; sleep 30 & echo b``). A
    backend that waits for the end of the output pipe waits for the background process too (a
    kernel runner is one; so is a daemon a cell's setup step starts)."""
    started = time.monotonic()
    code, out = _run(execute_backend, "echo a; sleep 30 & echo \"b $!\"", 60.0)
    took = time.monotonic() - started
    pid = out.split()[-1] if out.split() and out.split()[-1].isdigit() else None
    if pid is not None:
        _run(execute_backend, f"kill {pid} 2>/dev/null; true")
    assert took < BACKGROUND_RETURN_S, (
        f"execute('echo a; sleep 30 & echo b') took {took:.1f} s: a background process that inherited the "
        "command's output must not hold the call open (return once the command has exited and its output went "
        "quiet, or send the output to a file and read it after the exit)")
    assert code == 0 and out.startswith("a\nb "), f"returned ({code!r}, {out!r}), not (0, 'a\\nb <pid>\\n')"


def test_backend_runs_commands_concurrently(execute_backend, hermes_transport):
    """A second command runs while a first one waits for it: an interrupt or a dropped frame is an
    execute of its own while a cell's long poll runs. A backend that runs one command at a time
    (one shell session behind a lock) delays every interrupt by a whole poll window."""
    flag = shlex.quote(f"{hermes_transport.root}/concurrency-{secrets.token_hex(8)}")
    waiter = (f"umask 077; mkdir -p {shlex.quote(hermes_transport.root)}; i=0; "
              f"while [ ! -e {flag} ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done; "
              f"[ -e {flag} ] && echo SEEN; rm -f {flag}; echo DONE")
    first = call_in_thread(execute_backend.execute, waiter, 30.0)
    try:
        second = _run(execute_backend, f"i=0; until [ -d {shlex.quote(hermes_transport.root)} ] || [ $i -ge 50 ]; "
                                       f"do sleep 0.1; i=$((i+1)); done; touch {flag}", 30.0)
    finally:
        code, out = first.result(timeout=30.0 + TIMEOUT_SLACK_S)
        _run(execute_backend, f"rm -f {flag}")  # a backend that ran the two in turn left it
    assert second[0] == 0, f"the second command failed: {second!r}"
    assert "DONE" in out, (f"the first command's output came back without its last line (DONE): ({code!r}, "
                           f"{out!r}): the backend lost output, so this case cannot tell whether it ran the two at once")
    assert "SEEN" in out, ("execute ran the second command only after the first one had ended (the first waited 15 s "
                           "for it): commands must run concurrently (an interrupt is its own execute while a cell's "
                           f"long poll runs); the first returned ({code!r}, {out!r})")


#: A scan of every process's command line where the command runs, for the text ``$c`` (built from
#: two halves, so no argv of the scan holds it): builtins and ``tr`` only.
_ARGV_SCAN = ("c=\"$h1$h2\"; n=0\nfor f in /proc/[0-9]*/cmdline; do\n"
              "  a=$(tr '\\000' ' ' < \"$f\" 2>/dev/null) || continue; n=$((n+1))\n"
              "  case \"$a\" in *\"$c\"*) echo \"IN-ARGV ${f%/cmdline}: $a\";; esac\n"
              "done\necho \"SCANNED $n\"\n")


@pytest.mark.parametrize("call", ["execute", "execute_detached"])
def test_a_command_is_on_no_process_command_line(execute_backend, call):
    """The command text is in no process's argv while it runs (handed case B43): the launch command
    carries the kernel's whole config, its ``env`` (a test's secrets) with it, and an argv is what
    ``ps`` (any user of that host), ``docker inspect`` and process accounting show. A backend that
    runs ``subprocess.run(["sh", "-c", cmd])`` passed every other case. The command scans
    ``/proc/*/cmdline`` where it runs for a random text it also holds; ``execute_detached`` (the
    launch's call, where a backend has it) is checked too."""
    run = getattr(execute_backend, call, None)
    if run is None:
        pytest.skip(f"the backend has no {call} (the launch goes through execute)")
    canary = f"hermes-argv-canary-{secrets.token_hex(8)}"
    cmd = f": {canary}\nh1={canary[:12]}; h2={canary[12:]}\n{_ARGV_SCAN}"
    fut = call_in_thread(run, cmd, 60.0)
    code, out = fut.result(timeout=60.0 + TIMEOUT_SLACK_S)
    scanned = [line.split()[1] for line in out.splitlines() if line.startswith("SCANNED ")]
    assert code == 0 and scanned, f"the scan of /proc/*/cmdline did not run: ({code!r}, {out!r})"
    if scanned == ["0"]:
        pytest.skip("no /proc/*/cmdline could be read where the backend runs commands")
    leaks = [line for line in out.splitlines() if line.startswith("IN-ARGV ")]
    assert not leaks, (f"{call} put the command text on a process's command line, where ps shows it: "
                       + "; ".join(leak[:300] for leak in leaks) + ". The launch command carries the kernel's env "
                       "(its secrets): hand the command to the shell on its stdin (sh -c 's=$(cat); exec </dev/null; "
                       "eval \"$s\"'), never as an argument")
