"""A cell that lowers the recursion limit below what the kernel needs keeps its kernel.

``sys.setrecursionlimit(30)`` in a cell returned ``ok``; the worker's own code then ran out of
frames between cells and exited with code 70: the next cell said ``died`` and every name was
gone, with nothing to say why. The worker now keeps itself room after each cell (the limit is
raised back to its own depth plus a margin) and says so on the cell's stderr; a limit with room
enough is left as the cell set it.
"""

from __future__ import annotations


def test_a_recursion_limit_too_low_for_the_kernel_is_raised_and_said(hermes_kernel):
    lowered = hermes_kernel.execute("x = 1\nimport sys\nsys.setrecursionlimit(30)")

    after = hermes_kernel.execute("x + 1")

    assert lowered.status == "ok" and "recursion limit 30 leaves the kernel too little room" in lowered.stderr, \
        lowered.summary()
    assert after.status == "ok" and after.value == "2" and not after.kernel.state_lost, after.summary()


def test_a_lower_recursion_limit_with_room_enough_stays_as_the_cell_set_it(hermes_kernel):
    hermes_kernel.execute("import sys\nsys.setrecursionlimit(400)")

    result = hermes_kernel.execute("def down(n):\n    return down(n + 1)\ntry:\n    down(0)\nexcept RecursionError:\n"
                                   "    hit = True\nsys.getrecursionlimit(), hit")

    assert result.value == "(400, True)", result.summary()
