"""Output is bounded: a cell that floods stdout keeps the head and the tail of it.

Each stream of each cell is capped at ``max_output_bytes`` (1 MiB by default; 64 KiB here,
from the marker). Over the cap, the text keeps the first 40 % and the last 60 % around a
``[... N bytes dropped ...]`` marker, ``stdout_truncated`` is set and ``stdout_dropped_bytes``
says how much was left out.
"""

import re

import pytest

CAP = 64 * 1024
LINES = 100_000
FLOOD = f"for i in range({LINES}):\n    print(f'line {{i}}')"
FLOOD_BYTES = sum(len(f"line {i}\n") for i in range(LINES))  # about 1.1 MB

pytestmark = pytest.mark.hermes_kernel(max_output_bytes=CAP)


def test_a_flood_keeps_its_head_and_tail_and_counts_the_rest(hermes_kernel):
    result = hermes_kernel.execute(FLOOD)

    assert result.status == "ok" and result.stdout_truncated
    assert result.stdout.startswith("line 0\nline 1\n")
    assert result.stdout.endswith(f"line {LINES - 1}\n")
    assert len(result.stdout.encode()) <= CAP

    dropped = int(re.search(r"\[\.\.\. (\d+) bytes dropped \.\.\.\]", result.stdout).group(1))
    assert dropped == result.stdout_dropped_bytes
    head, _, tail = result.stdout.partition(f"\n[... {dropped} bytes dropped ...]\n")
    assert len(head.encode()) + dropped + len(tail.encode()) == FLOOD_BYTES  # nothing unaccounted


def test_streams_are_capped_separately_and_the_kernel_carries_on(hermes_kernel):
    result = hermes_kernel.execute(FLOOD + "\nimport sys\nprint('done', file=sys.stderr)")

    assert result.stdout_truncated and not result.stderr_truncated
    assert result.stderr == "done\n"
    assert hermes_kernel.execute("i").value == str(LINES - 1)  # the flood left the state intact
