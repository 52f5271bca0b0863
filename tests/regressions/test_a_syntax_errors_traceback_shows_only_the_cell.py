"""A cell with a syntax error shows the cell's line and caret, not the runner's parse call.

Its traceback began with ``File ".../lib/python3.11/ast.py", line 50, in parse`` and the
``compile(...)`` line of the standard library: the kernel's own parse of the cell, which a user
reading ``hermes-kernel exec`` or a result's ``traceback`` took for part of their error. The
cell is now parsed by ``compile`` itself (no Python frame), as an interpreter shows it.
"""

from __future__ import annotations


def test_a_syntax_errors_traceback_is_the_cells_alone(hermes_kernel):
    result = hermes_kernel.execute("x = 1\ny = (x,")

    assert (result.status, result.ename) == ("error", "SyntaxError"), result.summary()
    assert 'File "<cell>", line 2' in result.traceback and "never closed" in result.traceback, result.traceback
    assert "ast.py" not in result.traceback and "in parse" not in result.traceback, result.traceback
