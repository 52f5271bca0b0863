"""A cell that removed ``hermes_tools`` from ``sys.modules`` cut every later cell off the host's tools.

The worker put the module in ``sys.modules`` once, at its start; it has no spec, so after ``del
sys.modules['hermes_tools']`` (a module reloader, a cell clearing the modules it imported) every
later ``import hermes_tools`` raised ``ModuleNotFoundError: No module named 'hermes_tools'``, for
the kernel's life. The worker now puts it back before each cell, as it does the cell's stdout.
"""

from __future__ import annotations


def test_hermes_tools_is_importable_again_in_the_next_cell(hermes_kernel_factory):
    kernel = hermes_kernel_factory(tools={"add": lambda a, b: a + b})

    dropped = kernel.execute("import sys\ndel sys.modules['hermes_tools']")
    result = kernel.execute("import hermes_tools\nhermes_tools.add(a=1, b=2)")

    assert dropped.status == "ok", dropped.summary()
    assert result.value == "3", result.summary()
