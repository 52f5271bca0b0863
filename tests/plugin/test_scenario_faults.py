"""Faults in catalog scenarios take the markers' path: the same arguments, the same skip
reasons, the same injector; a bad fault table is a collection error that names the file."""

from __future__ import annotations

from tests.support import output_of

HEAD = """
[scenario]
name = "{name}"
source = "test"
"""

KERNEL_SIGKILL = HEAD.format(name="sigkill-between-cells") + """
[[fault]]
kind = "kernel_sigkill"
after_cell = 1

[[cell]]
code = "x = 1"
[[cell]]
code = "x"
expect = { status = "error", ename = "NameError", state_lost = true, reason = "died", signal = 9 }
"""

DROP = HEAD.format(name="drop-on-local") + """
[[fault]]
kind = "transport_drop"
mode = "reset"
after_cell = 1

[[cell]]
code = "x = 1"
"""

BAD_ARGUMENT = HEAD.format(name="bad-fault") + """
[[fault]]
kind = "transport_drop"
mode = "sideways"

[[cell]]
code = "x = 1"
"""

HOST_SIGKILL = HEAD.format(name="host-sigkill") + """
[[fault]]
kind = "host_sigkill"
after_cell = 1

[[cell]]
code = "x = 1"
"""


def test_a_scenario_fault_fires_through_the_injector(pytester, run):
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "sigkill.toml").write_text(KERNEL_SIGKILL)
    result = run("fixtures", "--hermes-transport=local")
    result.assert_outcomes(passed=1)


def test_a_scenario_fault_that_cannot_apply_skips_with_the_markers_reason(pytester, run):
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "drop.toml").write_text(DROP)
    result = run("fixtures", "--hermes-transport=local", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*transport_drop does not apply to the local transport: its channel is not re-attachable*"])


def test_bad_fault_tables_are_collection_errors_naming_the_file(pytester, run):
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "bad.toml").write_text(BAD_ARGUMENT)
    pytester.path.joinpath("fixtures", "host.toml").write_text(HOST_SIGKILL)
    result = run("fixtures", "--hermes-transport=local")
    result.assert_outcomes(errors=2)
    text = output_of(result)
    assert "bad.toml: fault 1: transport_drop: mode must be 'reset', 'blackhole' or 'latency', not 'sideways'" in text
    assert "host.toml: fault 1: host_sigkill is not available in scenarios" in text
