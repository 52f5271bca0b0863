"""Handed case B36: an execute-only call ends when its command does, with all of its output.

Over the execute-only reference backends (``sh -c`` here, ``docker exec`` into the run's kernel
host container, ssh exec channels into the run's sshd container):

* (a) a background descendant that inherited the output (``sleep 300 &``) cannot hold the call
  open: it returns at once with ``a\\nb\\n`` and exit 0. Policy: the descendant keeps running
  (the protocol's rule for background processes: the kernel runner is one); what it writes
  later is not part of the result. The test ends it.
* (b) 2,000,000 bytes written right before the exit all arrive, also while the calling process
  is busy in another thread (the reader then looks again only once the command has exited with
  its last output still unread: a reader that stopped at the exit lost it there, and only there);
* (c) a command that reads stdin (``cat``) returns at once: stdin is ``/dev/null`` or closed.
"""

from __future__ import annotations

import secrets
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pytest_hermes_kernel.transports.filecell.backends import ExecuteBackend

#: Seconds a call may take for a command that is done at once (a hang, not slowness, beyond it;
#: docker's own exec drain is 2 s).
PROMPT_S = 5.0


def _timed(execute_backend: ExecuteBackend, cmd: str, timeout: float = 60.0) -> tuple[int, str, float]:
    started = time.monotonic()
    code, out = execute_backend.execute(cmd, timeout)
    return code, out, time.monotonic() - started


def test_a_background_descendant_holding_stdout_cannot_hold_the_call(execute_backend):
    pidfile = f"/tmp/hermes-b36-{secrets.token_hex(6)}.pid"
    try:
        code, out, took = _timed(execute_backend, f"echo a; sleep 300 & echo $! > {pidfile}; echo b")
        assert (code, out) == (0, "a\nb\n")
        assert took < PROMPT_S, f"the call took {took:.1f} s: the background sleep held it open"
    finally:
        execute_backend.execute(f"kill $(cat {pidfile}) 2>/dev/null; rm -f {pidfile}", 30.0)


def test_output_written_right_before_exit_is_never_lost(execute_backend):
    code, out, _ = _timed(execute_backend, "head -c 2000000 /dev/zero | tr '\\0' x; exit 0")
    assert code == 0 and len(out) == 2_000_000 and set(out) == {"x"}


@contextmanager
def _busy_caller(switch_s: float = 0.02) -> Iterator[None]:
    """This process busy in another thread (a CPU-bound test beside the call, a loaded worker): a
    thread that blocked in a read waits up to ``switch_s`` seconds for the interpreter lock
    afterwards, so a short command's exit comes between two looks of the output's reader."""
    previous, stop = sys.getswitchinterval(), threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    busy = threading.Thread(target=spin, name="b36-busy-caller", daemon=True)
    sys.setswitchinterval(switch_s)
    busy.start()
    try:
        yield
    finally:
        stop.set()
        busy.join()
        sys.setswitchinterval(previous)


def test_output_still_unread_when_the_command_exits_is_never_lost(execute_backend):
    """(b) with the caller busy. Without it the reader keeps up with the command and holds nothing
    back at the exit, so a reader that returned as the command exited passed (b) above; with it,
    the local shell's lost its last 9 to 58 KB in each of 10 runs (the ssh one's, 1 run of 5)."""
    with _busy_caller():
        code, out, _ = _timed(execute_backend, "head -c 2000000 /dev/zero | tr '\\0' x; exit 0")
    assert code == 0 and len(out) == 2_000_000 and set(out) == {"x"}, f"{code}: {len(out):,} of 2,000,000 bytes"


def test_stdin_is_closed(execute_backend):
    code, out, took = _timed(execute_backend, "cat", timeout=30.0)
    assert (code, out) == (0, "") and took < PROMPT_S, f"cat waited {took:.1f} s for stdin"
