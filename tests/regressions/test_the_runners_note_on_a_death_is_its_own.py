"""Found by a breaker helper (2026-12-06, review of b3af108): the runner kept the last line that
began "hermes-kernel runner: " among the stderr no cell took and handed it with the next death,
whoever wrote it and whenever:

- a cell's leftover (a thread, a signal handler, a subprocess) that wrote such a line and then
  ended the worker had it shown as the runner's word: "the kernel died between cells (exit code
  9); hermes-kernel runner: cannot enter the working directory cwd='/nowhere' ..." for a worker
  that exited 9 in a dir that was there;
- the line reached ``result.kernel.note`` unredacted (a ``ghp_`` token printed whole), where
  the same bytes in a cell's stderr are ``[REDACTED]``;
- a real line outlived its worker: after a restart into a removed ``cwd=``, the dir made again
  and ``restart()``, a cell that ran and exited with code 3 was reported with "cannot enter the
  working directory" too.

Fixed: the runner keeps only what the current worker said since it was forked, and hands it only
with a worker that exited as a failed start does (code 70); the host redacts the note.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.transports import Transport
from tests.support import signal_in_kernel, wait_until

TOKEN = "ghp_" + "Z9y8X7w6" * 5
SPOOF = "hermes-kernel runner: cannot enter the working directory cwd='/nowhere': No such file or directory"


def _handler_that_says(line: str, code: int) -> str:
    return ("import os, signal\n"
            "def bye(*_):\n"
            f"    os.write(2, {(line + chr(10)).encode()!r})\n"
            f"    os._exit({code})\n"
            "signal.signal(signal.SIGUSR1, bye)")


def _worker_gone(kernel: Any, pid: int) -> bool:
    try:
        kernel.transport.signal_pid(kernel.launched, pid, 0)
    except ProcessLookupError:
        return True
    return False


def _die_between_cells(kernel: Any, line: str, code: int) -> Any:
    assert kernel.execute(_handler_that_says(line, code)).status == "ok"
    pid = kernel.pid
    signal_in_kernel(kernel, pid, signal.SIGUSR1)
    wait_until(lambda: _worker_gone(kernel, pid), 15.0, what="the worker to die between cells")
    return kernel.execute("'next'")


@pytest.mark.hermes_transports("local", "docker", "ssh")
def test_a_line_a_cell_left_is_not_the_runners_word_on_a_death(hermes_kernel: Any) -> None:
    r = _die_between_cells(hermes_kernel, SPOOF, 9)

    assert r.kernel.state_lost and r.kernel.exit_code == 9, r.summary()
    assert "cannot enter" not in r.kernel.note and "/nowhere" not in r.kernel.note, r.kernel.note


@pytest.mark.hermes_transports("local", "docker", "ssh")
def test_a_death_note_is_redacted(hermes_kernel: Any) -> None:
    r = _die_between_cells(hermes_kernel, f"hermes-kernel runner: {TOKEN}", 70)

    assert r.kernel.state_lost and r.kernel.exit_code == 70, r.summary()
    assert TOKEN not in r.kernel.note, r.kernel.note


@pytest.mark.hermes_transports("local", "docker", "ssh")
def test_the_runners_line_is_not_handed_with_a_later_death(hermes_transport: Transport,
                                                           start: Callable[..., KernelHandle]) -> None:
    work = f"/tmp/hermes-stale-cwd-{uuid.uuid4().hex[:10]}"
    maker = start(hermes_transport)
    assert maker.execute(f"import os\nos.makedirs({work!r})").status == "ok"
    kernel: Any = start(hermes_transport, cwd=work)
    assert kernel.execute(f"import os, shutil\nos.chdir('/')\nshutil.rmtree({work!r})").status == "ok"
    for _ in range(20):  # until the line came with no cell running (the worker died before the cell came)
        kernel.restart()
        pid = kernel.pid
        wait_until(lambda: _worker_gone(kernel, pid), 15.0, what="the restarted worker to fail its start")
        first = kernel.execute("1")
        assert "cannot enter the working directory" in first.kernel.note + first.stderr, first.summary()
        if "before it ran the cell" in first.kernel.note:
            break
    assert maker.execute(f"os.makedirs({work!r})").status == "ok"
    kernel.restart()

    r = kernel.execute("import os\nos._exit(3)")
    assert maker.execute(f"import shutil\nshutil.rmtree({work!r})").status == "ok"  # (it stayed in /tmp, one a run)

    assert r.status == "died" and r.kernel.exit_code == 3, r.summary()
    assert "cannot enter" not in r.kernel.note, r.kernel.note
