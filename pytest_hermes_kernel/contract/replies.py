"""Contract: the size of a reply never costs the kernel.

A cell's trailing value, its error message and its traceback are bounded like its output: over
the cap the value keeps its head and tail around a ``[... N characters dropped ...]`` marker,
says it was truncated and gives the full ``repr`` length. A request too large for one frame
(a cell's source) is refused on the host with :class:`FrameTooLargeError` before anything is
sent; the kernel and its state are untouched. One that fits, however large (a cell's source, a
tool's result: megabytes towards the kernel), arrives whole.
"""

from __future__ import annotations

import re

import pytest

from pytest_hermes_kernel.errors import FrameTooLargeError
from pytest_hermes_kernel.kernel.results import MAX_FRAME_BYTES

VALUE_MARKER = re.compile(r"\n\[\.\.\. (\d+) characters dropped \.\.\.\]\n")


def test_large_value_keeps_head_tail_and_full_length(kernel_factory):
    cap = 64 * 1024
    k = kernel_factory(max_output_bytes=cap)

    r = k.execute('"HEAD" + "y" * 500_000 + "END"')

    assert r.status == "ok" and r.value_truncated, r.summary()
    assert r.value_length == len("'HEAD'") + 500_000 + len("END")
    assert r.value.startswith("'HEAD") and r.value.endswith("END'")
    (dropped,) = map(int, VALUE_MARKER.findall(r.value))
    assert len(VALUE_MARKER.sub("", r.value)) + dropped == r.value_length
    assert len(r.value) <= cap
    small = k.execute("'short'")
    assert (small.value, small.value_truncated, small.value_length) == ("'short'", False, 7)


def test_value_past_the_frame_limit_keeps_the_kernel(kernel):
    size = MAX_FRAME_BYTES + 16 * 2**20  # whole, this reply could never be one frame

    first = kernel.execute("1").kernel.generation
    r = kernel.execute(f"v = 'y' * {size}\nv")

    assert r.status == "ok", r.summary()
    assert r.value_truncated and r.value_length == size + 2
    assert not r.kernel.state_lost and r.kernel.generation == first
    assert kernel.execute("len(v)").value == str(size)


def test_huge_error_message_is_bounded_and_kernel_lives(kernel_factory):
    cap = 64 * 1024
    k = kernel_factory(max_output_bytes=cap)

    r = k.execute(f"keep = 1\nraise ValueError('e' * {MAX_FRAME_BYTES + 2**20})")

    assert r.status == "error" and r.ename == "ValueError", r.summary()
    assert "characters dropped" in r.evalue and len(r.evalue) < 2 * cap
    assert len(r.traceback) < 2 * cap
    assert k.execute("keep").value == "1"


#: Characters of the large cell source and tool result (megabytes: several reads and writes of any stream).
LARGE_CHARS = 3_000_000
#: The large cell's budget: a frame the stream lost would leave the cell waiting all of it.
LARGE_CELL_BUDGET_S = 30.0


def test_a_large_cell_source_and_tool_result_reach_the_kernel_whole(kernel_factory):
    """Frames towards the kernel are as large as a cell's source or a tool's result: a stream that
    loses (or cuts) a large one passed every other case, and such a cell waited out its budget."""
    k = kernel_factory(tools={"big": lambda: "t" * LARGE_CHARS + "END"})
    source = (f"s = {'x' * LARGE_CHARS + 'END'!r}\nimport hermes_tools\nr = hermes_tools.big()\n"
              "(len(s), s[-3:], len(r), r[-3:])")

    r = k.execute(source, timeout=LARGE_CELL_BUDGET_S)

    assert r.status == "ok", f"a {len(source)}-byte cell with a {LARGE_CHARS}-character tool result: {r.summary()}"
    assert r.value == repr((LARGE_CHARS + 3, "END", LARGE_CHARS + 3, "END")), r.value


def test_oversized_source_is_refused_kernel_untouched(kernel):
    first = kernel.execute("keep = 41").kernel.generation

    with pytest.raises(FrameTooLargeError, match="frame limit"):
        kernel.execute("#" + "a" * MAX_FRAME_BYTES)

    r = kernel.execute("keep + 1")
    assert r.value == "42" and not r.kernel.state_lost and r.kernel.generation == first


def test_tool_result_past_the_frame_limit_is_the_cells_error(kernel_factory):
    k = kernel_factory(tools={"big": lambda: "z" * (MAX_FRAME_BYTES + 2**20)})

    r = k.execute("import hermes_tools\nkeep = 2\nhermes_tools.big()")

    assert r.status == "error" and r.ename == "ToolError" and "does not fit in a frame" in r.evalue, r.summary()
    assert k.execute("keep").value == "2"
