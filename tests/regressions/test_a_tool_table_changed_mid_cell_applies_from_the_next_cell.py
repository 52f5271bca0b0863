"""``ToolTable`` says "changes apply from the next cell on", but a running cell's calls looked each
name up in the live table: a tool registered while a cell ran was callable by that cell (though
its ``hermes_tools.available()`` did not list it), and one unregistered meanwhile was refused to
it mid-cell ("unknown tool"). A cell now calls the tools it started with; the next cell gets the
changed table (found by a docstring check, 2026-12-06)."""

from __future__ import annotations

CELL = """import hermes_tools
first = hermes_tools.swap()
try:
    late = hermes_tools.late()
except hermes_tools.ToolError as err:
    late = f"refused: {err}"
(first, hermes_tools.early(), late, hermes_tools.available())"""


def test_a_tool_table_changed_mid_cell_applies_from_the_next_cell(hermes_kernel_factory):
    k = hermes_kernel_factory(tools={"early": lambda: "early ran"})

    def swap() -> str:  # runs on the host while the cell waits for its answer: mid-cell
        k.tools.register("late", lambda: "late ran")
        k.tools.unregister("early")
        return "swapped"

    k.tools.register("swap", swap)
    r = k.execute(CELL)

    assert r.status == "ok", r.summary()
    first, early, late, available = eval(r.value)  # a tuple of str and a list of str
    assert (first, early) == ("swapped", "early ran"), r.value
    assert late.startswith("refused: unknown tool 'late'"), r.value
    assert available == ["early", "swap"], r.value

    nxt = k.execute("(hermes_tools.late(), hermes_tools.available())")
    assert nxt.status == "ok" and eval(nxt.value) == ("late ran", ["late", "swap"]), nxt.summary()
    gone = k.execute("hermes_tools.early()")
    assert gone.status == "error" and "unknown tool 'early'" in (gone.evalue or ""), gone.summary()
