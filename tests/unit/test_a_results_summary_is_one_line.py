"""``CellResult.summary()`` says "One line for logs and assertion messages", but an error whose
message holds a line break (``ValueError('first line\\nsecond line')``, a ``SystemExit`` text, a
note) made it two or more lines: ``hermes-kernel exec``'s ``[status=...]`` line on stderr and the
catalog runner's log line broke in the middle of the error (a docstring check, 2026-12-06). A line
break now shows as ``\\n``."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import CellResult, KernelInfo


@pytest.mark.parametrize("evalue, note", [("first line\nsecond line", ""), ("a\r\nb\rc", "x\u2028y"),
                                          ("plain", "the note\nof two lines")])
def test_a_results_summary_is_one_line(evalue, note):
    r = CellResult(status="error", kernel=KernelInfo(kernel_id="k", transport="local", note=note), ename="ValueError",
                   evalue=evalue)
    summary = r.summary()
    assert len(summary.splitlines()) == 1, repr(summary)
    assert summary.startswith("status=error; ValueError: ") and "\\n" in summary, repr(summary)


def test_a_summary_without_line_breaks_is_as_it_was():
    r = CellResult(status="timeout", kernel=KernelInfo(kernel_id="k", transport="local"), watchdog="interrupted")
    assert r.summary() == "status=timeout; watchdog=interrupted"
