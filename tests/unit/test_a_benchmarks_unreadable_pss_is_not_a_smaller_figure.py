"""``benchmarks/measures.py``'s memory cell: a PSS or RSS it cannot read in both the worker and
its supervisor is no figure, not a smaller one.

Seen (breaker review, 2026-12-06): an unreadable ``/proc/<pid>/smaps_rollup`` (a kernel without
it, a /proc the container restricts) counted as 0 MB, so "idle_pss" was the worker's alone, or
0.000 MB beside jupyter_client's.
"""

from __future__ import annotations

import ast
import builtins
import io
import os
from typing import Any

import pytest

from tests.support import bench_module

STATUS = "Name:\tpython\nVmRSS:\t   20480 kB\n"
ROLLUP = "Rss:   20480 kB\nPss:   10240 kB\n"


def _run_cell(cell: str, readable: set[str]) -> Any:
    """The cell's value, with ``open`` giving fake /proc files: those named in ``readable``."""
    def fake_open(path: str, *args: Any, **kwargs: Any) -> io.StringIO:
        pid, name = path.split("/")[2:4]
        who = "self" if pid in ("self", str(os.getpid())) else "parent"
        if f"{who}/{name}" not in readable:
            raise PermissionError(13, "Permission denied", path)
        return io.StringIO(STATUS if name == "status" else ROLLUP)

    tree = ast.parse(cell)
    last = ast.Expression(tree.body.pop().value)
    scope: dict[str, Any] = {"__builtins__": {**vars(builtins), "open": fake_open}}
    exec(compile(tree, "<cell>", "exec"), scope)  # noqa: S102 - the benchmark's own cell
    return eval(compile(last, "<cell>", "eval"), scope)  # noqa: S307


def test_both_processes_readable_give_their_sum_in_mb() -> None:
    """MB are 10^6 bytes (they were MiB, labelled MB): 2 x 20480 kB of RSS is 41.94 MB."""
    every = {"self/status", "parent/status", "self/smaps_rollup", "parent/smaps_rollup"}
    assert _run_cell(bench_module("measures").MEMORY_CELL, every) == (2 * 20480 * 1024 / 10**6, 2 * 10240 * 1024 / 10**6)


@pytest.mark.parametrize("unreadable", ["parent/smaps_rollup", "self/smaps_rollup"])
def test_a_pss_not_readable_in_one_process_is_no_figure(unreadable: str) -> None:
    every = {"self/status", "parent/status", "self/smaps_rollup", "parent/smaps_rollup"}
    rss, pss = _run_cell(bench_module("measures").MEMORY_CELL, every - {unreadable})
    assert (rss, pss) == (2 * 20480 * 1024 / 10**6, None)
