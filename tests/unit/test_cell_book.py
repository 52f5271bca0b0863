"""The supervisor's book of the running cell (kernel/runner/cells.py): a reply up to the frame
limit goes out whole, one byte more becomes an error that says so, and the OOM count a death is
judged by is the one at that cell's start. Written against the survivors of the mutation run of
``cells.py`` (issue #13). The running cell's tool calls are kept until answered (a re-attaching
host gets them again) and forgotten when the cell settles."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_hermes_kernel.kernel.runner import cells
from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame

LIMIT = 4096  # a small frame limit, so that a test can build a reply of exactly that size


class Pipes:
    """The worker's output pipes as the book sees them: the cell printed nothing, nor did the runner
    outside a cell (``said``)."""

    said = b""

    def drain(self, capturing: bool) -> None: ...

    def reset(self) -> None: ...

    def last_said(self, exit_code: int | None) -> str:
        return ""

    def take(self) -> tuple[dict[str, int], tuple[bytes, bytes, bytes, bytes]]:
        return dict(COUNTS), (b"", b"", b"", b"")


COUNTS = {"stdout_total": 0, "stdout_dropped": 0, "stderr_total": 0, "stderr_dropped": 0}


class Worker:
    pid, generation = 4242, 1

    def __init__(self, oom_file: str | None = None, own: bool = True) -> None:
        self.oom_file = oom_file
        self.oom_file_own = own  # (hermes_oom's cgroup; False: the one the worker was found in)

    def counter_is_own(self) -> bool:  # (the real one also looks for another kernel's processes in the group)
        return self.oom_file_own


def _settled(book: cells.CellBook, value: str) -> tuple[dict, int]:
    """The header the book sends for a cell whose reply carries ``value``, and the frame's size."""
    book.begin({"type": "execute", "id": 7, "code": "value"})
    request_id, frame = book.settle({"type": "result", "id": 7, "status": "ok", "value": value})
    decoder = FrameDecoder(LIMIT)
    decoder.feed(frame)
    header, _ = decoder.next_frame()
    assert request_id == 7
    return header, len(frame)


def _frame_size(value_length: int) -> int:
    """Bytes of the result frame the book builds for a reply whose value has ``value_length`` characters."""
    header = {"type": "result", "id": 7, "status": "ok", "value": "v" * value_length, **COUNTS,
              "worker_pid": Worker.pid, "worker_generation": Worker.generation}
    return len(encode_frame(header, (b"", b"", b"", b"")))


def test_a_reply_of_exactly_the_frame_limit_goes_out_whole_and_one_byte_more_is_refused(monkeypatch):
    monkeypatch.setattr(cells, "MAX_FRAME_BYTES", LIMIT)
    book = cells.CellBook(Pipes(), Worker())  # type: ignore[arg-type]
    fill = next(n for n in range(LIMIT) if _frame_size(n) == LIMIT)

    header, size = _settled(book, "v" * fill)
    assert size == LIMIT and header["status"] == "ok" and header["value"] == "v" * fill

    header, size = _settled(book, "v" * (fill + 1))
    assert header["status"] == "error" and header["ename"] == "ReplyTooLarge" and "value" not in header
    assert f"is {LIMIT + 1} bytes, over the" in header["evalue"], header


def test_a_death_is_judged_by_the_count_at_its_cells_start(tmp_path: Path):
    counter = tmp_path / "memory.events"
    counter.write_text("oom 0\noom_kill 0\n")
    book = cells.CellBook(Pipes(), Worker(str(counter)))  # type: ignore[arg-type]

    book.begin({"type": "execute", "id": 1, "code": "run a child that is OOM-killed"})
    counter.write_text("oom 1\noom_kill 1\n")  # the child's kill, while cell 1 runs
    book.settle({"type": "result", "id": 1, "status": "ok"})
    book.begin({"type": "execute", "id": 2, "code": "at once after"})
    died = book.died((None, 9))

    book.close()
    assert died["oom_killed"] is False and died["oom_counter"] == 1


@pytest.mark.parametrize("text, count", [("oom 3\noom_kill 2\n", 2), ("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n", 5),
                                         ("oom 1\n", None), ("oom_kill x\n", None)])
def test_the_oom_kill_count_is_read_from_v1_and_v2_files(tmp_path: Path, text: str, count: int | None):
    from pytest_hermes_kernel.kernel.runner.procfs import OomCounter, read_oom_kills

    path = tmp_path / "counter"
    path.write_text(text)
    held = OomCounter(str(path))
    assert read_oom_kills(str(path)) == count and held.read() == count
    path.unlink()
    assert read_oom_kills(str(path)) is None and OomCounter(str(path)).read() is None
    held.close()


def _call(call_id: str, cell: int) -> dict:
    return {"type": "tool_call", "id": call_id, "cell": cell, "name": "lookup", "args": {}}


def test_the_running_cells_tool_calls_are_kept_in_order_until_answered():
    book = cells.CellBook(Pipes(), Worker())  # type: ignore[arg-type]
    book.begin({"type": "execute", "id": 3, "code": "two calls"})

    assert book.keep_tool_call(_call("w-1", 3)) and book.keep_tool_call(_call("w-2", 3))
    assert [c["id"] for c in book.unanswered()] == ["w-1", "w-2"]
    book.answered("w-1")
    book.answered("never-made")  # an answer sent again after a re-attach: nothing to forget
    assert book.unanswered() == [_call("w-2", 3)]


def test_a_call_of_no_running_cell_is_not_kept_and_a_settled_cell_forgets_its_calls():
    book = cells.CellBook(Pipes(), Worker())  # type: ignore[arg-type]
    assert not book.keep_tool_call(_call("w-1", 3)), "no cell runs"
    book.begin({"type": "execute", "id": 4, "code": "a call left unanswered"})
    assert not book.keep_tool_call(_call("w-2", 3)), "an earlier cell's call"
    assert book.keep_tool_call(_call("w-3", 4))

    book.settle({"type": "result", "id": 4, "status": "ok"})

    assert book.unanswered() == []


def test_a_numbered_interrupt_is_applied_once_per_cell_and_an_unnumbered_one_always():
    """A host sends its last interrupt again after a re-attach when it cannot tell whether the
    silent stream delivered it: the runner applies each number once, and counts from 0 per cell
    (the count is in its hello)."""
    book = cells.CellBook(Pipes(), Worker())
    assert not book.take_interrupt({"type": "interrupt", "id": 7, "n": 1})  # no cell runs
    book.begin({"type": "execute", "id": 7, "code": "x"})
    assert book.take_interrupt({"type": "interrupt", "id": 7, "n": 1})
    assert not book.take_interrupt({"type": "interrupt", "id": 7, "n": 1})  # sent again: got it
    assert book.take_interrupt({"type": "interrupt", "id": 7, "n": 2}) and book.interrupts == 2
    assert book.take_interrupt({"type": "interrupt", "id": 7}) and book.take_interrupt({"type": "interrupt", "id": 7})
    book.settle({"type": "result", "id": 7, "status": "interrupted"})
    book.begin({"type": "execute", "id": 8, "code": "y"})
    assert book.interrupts == 0 and book.take_interrupt({"type": "interrupt", "id": 8, "n": 1})


def test_an_interrupt_naming_a_cell_that_has_ended_is_not_applied_to_the_next_one():
    """``interrupt()`` on a thread preempted between taking the running cell and sending can
    send its frame after the next cell's request: it names the cell that ended, and is dropped."""
    book = cells.CellBook(Pipes(), Worker())
    book.begin({"type": "execute", "id": 7, "code": "x"})
    book.settle({"type": "result", "id": 7, "status": "ok"})
    book.begin({"type": "execute", "id": 8, "code": "y"})

    assert not book.take_interrupt({"type": "interrupt", "id": 7, "n": 1})
    assert book.interrupts == 0 and book.take_interrupt({"type": "interrupt", "id": 8, "n": 1})


def test_an_interrupt_before_the_worker_says_the_cell_runs_is_held_until_it_does():
    """The supervisor signals a cell only once the worker said ``running`` from inside it: a SIGINT
    reaching the worker between cells is then always a late one (see the worker's ``on_sigint``)."""
    book = cells.CellBook(Pipes(), Worker())
    book.begin({"type": "execute", "id": 7, "code": "x"})

    assert book.take_interrupt({"type": "interrupt", "id": 7, "n": 1}) and not book.started
    book.held = True
    book.settle({"type": "result", "id": 7, "status": "ok"})

    book.begin({"type": "execute", "id": 8, "code": "y"})
    assert not book.held and not book.started, "a held interrupt is its own cell's only"
