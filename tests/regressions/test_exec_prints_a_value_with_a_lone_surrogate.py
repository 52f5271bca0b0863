"""``hermes-kernel exec`` (and ``attach``) crashed printing a value that holds a lone surrogate.

A cell's value is its ``repr``, user code: one returning ``'v\\ud800'`` reaches the host as it is
(the frame carries it JSON-escaped). ``print_result`` wrote it to ``sys.stdout``, whose errors
are strict, and the command ended in a ``UnicodeEncodeError`` traceback after the cell had run;
the value is now written with the character as its escape, as the kernel's story writes it.
"""

from __future__ import annotations

import io

from pytest_hermes_kernel.postmortem import print_result

CELL = "class R:\n    def __repr__(self):\n        return 'v\\ud800'\nR()"


def test_a_value_with_a_lone_surrogate_is_printed_with_its_escape(make_kernel):
    result = make_kernel().execute(CELL)
    assert result.value == "v\ud800", result.summary()
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # strict, as sys.stdout is
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")  # as sys.stderr is

    print_result(result, out, err)

    assert out.buffer.getvalue() == b"v\\ud800\n"  # type: ignore[attr-defined]
