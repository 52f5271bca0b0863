"""What a cell's output keeps under its cap, and a short secret printed alone (kernel/output.py).

Written against survivors of the mutation run of ``kernel/output.py`` (issue #13): a secret of
8 or 9 characters printed on its own line (``print(token)``: 9 characters with the newline) was
given back unredacted, because text shorter than 10 characters skipped redaction altogether.
"""

from __future__ import annotations

import re

from pytest_hermes_kernel.kernel.output import REDACTED

MARKER = re.compile(r"\n\[\.\.\. (\d+) bytes dropped \.\.\.\]\n")


def test_an_over_cap_stream_keeps_the_cap_less_96_bytes_held_for_the_marker(make_kernel):
    k = make_kernel(max_output_bytes=1024)

    r = k.execute('print("y" * 5000)')

    assert r.stdout_truncated and len(r.stdout.encode()) <= 1024
    kept = MARKER.sub("", r.stdout)
    assert len(kept) == 1024 - 96, "all of the cap but the marker's reserve is output"
    assert len(kept) + r.stdout_dropped_bytes == 5001


def test_a_short_secret_printed_alone_is_redacted(make_kernel):
    k = make_kernel(env={"HK_SHORT_TOKEN": "hunter22"})  # 8 characters: the shortest redacted literal

    assert k.execute('import os; print(os.environ["HK_SHORT_TOKEN"])').stdout == f"{REDACTED}\n"
    assert k.execute('print(os.environ["HK_SHORT_TOKEN"], end="")').stdout == REDACTED
    assert k.execute('print("hunter2")').stdout == "hunter2\n", "not a secret value: untouched"
