"""Faults in catalog scenarios take the markers' path: the same arguments, the same skip
reasons, the same injector; a bad fault table is a collection error that names the file."""

from __future__ import annotations

from tests.support import output_of

HEAD = """
[scenario]
name = "{name}"
source = "test"
"""

SIGKILL_AFTER_CELL_1 = """
[[fault]]
kind = "kernel_sigkill"
after_cell = 1
"""

KERNEL_SIGKILL = HEAD.format(name="sigkill-between-cells") + SIGKILL_AFTER_CELL_1 + """
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

DURING = HEAD.format(name="sigkill-during-steps") + """
[[fault]]
kind = "kernel_sigkill"
during_cell = 2
delay = 0.3

[[fault]]
kind = "kernel_sigkill"
during_cell = 3
delay = 1.0

[[cell]]
code = "x = 1"
[[cell]]
code = "import time; time.sleep(30)"
timeout = 20
expect = { status = "died", reason = "died", signal = 9, max_duration_s = 10 }
[[cell]]
code = "y = 3"
[[cell]]
code = "import time; time.sleep(2); y"
expect = { status = "ok", value = "3" }
"""


def _run_scenario(pytester, run, name, text, *args):  # type: ignore[no-untyped-def]
    """Run scenario ``text`` as ``fixtures/<name>.toml`` with ``args``."""
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", f"{name}.toml").write_text(text)
    return run("fixtures", *args)


def test_a_scenario_fault_fires_through_the_injector(pytester, run):
    result = _run_scenario(pytester, run, "sigkill", KERNEL_SIGKILL, "--hermes-transport=local")
    result.assert_outcomes(passed=1)


def test_a_scenario_fault_that_cannot_apply_skips_with_the_markers_reason(pytester, run):
    result = _run_scenario(pytester, run, "drop", DROP, "--hermes-transport=local", "-rs")
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


def test_a_fault_during_a_step_lands_mid_step_and_dies_with_a_step_that_ends_first(pytester, run):
    """Step 2's fault kills its cell; step 3 ends before its fault's delay, so that fault never
    fires (it does not hit step 4, which outlasts the delay: step 4's expectation holds), and the
    scenario fails saying so, as a fault marker's test errors (it passed: a fresh-install helper's
    ``during_cell = 1, delay = 2`` on a short cell went green without its fault)."""
    result = _run_scenario(pytester, run, "during", DURING, "--hermes-transport=local")
    result.assert_outcomes(failed=1)
    failure = output_of(result)
    failure = failure[failure.index("= FAILURES ="):failure.index("hermes-kernel summary")]
    assert failure.count("\n  ") == 1, failure  # one problem: the unfired fault (step 4 was not hit)
    assert ("fault kernel_sigkill never fired: its step ended before the delay was over, or its cell did not start "
            "within its timeout; the scenario did not meet its fault. Hint: make that step's cell run longer") in failure


UNREACHED = HEAD.format(name="fault-past-the-last-step") + """
[[fault]]
kind = "kernel_sigkill"
after_cell = 5

[[cell]]
code = "x = 1"
"""


def test_a_fault_whose_step_never_comes_fails_the_scenario(pytester, run):
    result = _run_scenario(pytester, run, "unreached", UNREACHED, "--hermes-transport=local")
    result.assert_outcomes(failed=1)
    assert ("fault kernel_sigkill never fired: its trigger is past the scenario's last step (1); the scenario did not "
            "meet its fault. Hint: add the steps it needs") in output_of(result)


EXIT_THEN_SIGKILL = HEAD.format(name="exit-then-sigkill") + SIGKILL_AFTER_CELL_1 + """
[[cell]]
code = "import os; os._exit(3)"
expect = { status = "ok" }
[[cell]]
code = "1"
"""


def test_a_fault_that_raises_after_a_failed_expectation_reports_both(pytester, run):
    """What went wrong first (cell 1 was not ``ok``) leads; the fault's own error follows it."""
    result = _run_scenario(pytester, run, "exit", EXIT_THEN_SIGKILL, "--hermes-transport=local")
    result.assert_outcomes(failed=1)
    text = output_of(result)
    first, then = text.find("cell 1: expected status='ok'"), text.find("then fault kernel_sigkill after step 1 raised")
    assert 0 <= first < then, text[-3000:]
    assert "exited with code 3" in text[first:then], text[-3000:]


EXIT_AS_EXPECTED_THEN_SIGKILL = HEAD.format(name="exit-as-expected-then-sigkill") + SIGKILL_AFTER_CELL_1 + """
[[cell]]
code = "import sys; sys.exit(3)"
expect = { status = "exited", exit_code = 3 }
"""


def test_a_fault_with_nothing_to_kill_fails_in_a_few_lines_that_say_why(pytester, run):
    """Found by a fresh-install helper: a kernel_sigkill due after a cell that ended the worker
    raised a bare ``ProcessLookupError`` (local) or "no process N in container" (docker), shown as
    ~900 lines of pytest and pluggy frames. Now the fault says there was nothing to kill and
    what to do, and a scenario shows an error of the kit's own as its message."""
    result = _run_scenario(pytester, run, "exit", EXIT_AS_EXPECTED_THEN_SIGKILL, "--hermes-transport=local")
    result.assert_outcomes(failed=1)
    text = output_of(result)
    assert "ConfigError: kernel_sigkill: the worker of kernel" in text, text[-3000:]
    assert "had already ended when the fault was due" in text and "Hint: fire it after a cell" in text
    assert "ProcessLookupError" not in text and "pluggy/" not in text and "_pytest/" not in text, text[-3000:]
    failure = text[text.index("= FAILURES ="):text.index("hermes-kernel summary")]
    assert len(failure.splitlines()) < 15, failure


def test_two_memory_limits_in_one_scenario_are_a_collection_error(pytester, run):
    """One of the two ``oom`` faults held silently (which one depended on the transport)."""
    text = ('[scenario]\nname = "two-limits"\n\n[[fault]]\nkind = "oom"\nlimit_bytes = 67108864\n\n'
            '[[fault]]\nkind = "oom"\nlimit_bytes = 536870912\n\n[[cell]]\ncode = "1"\n')
    result = _run_scenario(pytester, run, "two_limits", text, "--hermes-transport=local")
    result.assert_outcomes(errors=1)
    assert ("two_limits.toml: oom is given 2 times (limit_bytes=67108864, limit_bytes=536870912): a kernel runs "
            "under one memory limit") in output_of(result)


def test_a_fault_during_a_step_that_runs_no_cell_is_a_collection_error(pytester, run):
    """A restart, reap or shutdown step runs no cell to fault during: the scenario ran and failed
    with "its step ended before the delay was over ... make that step's cell run longer"."""
    text = ('[scenario]\nname = "during-restart"\n\n[[fault]]\nkind = "kernel_sigkill"\nduring_cell = 2\n\n'
            '[[cell]]\ncode = "1"\n\n[[cell]]\naction = "restart"\n\n[[cell]]\ncode = "2"\n')
    result = _run_scenario(pytester, run, "during_restart", text, "--hermes-transport=local")
    result.assert_outcomes(errors=1)
    assert ('during_restart.toml: fault 1: during_cell = 2 is a restart step, which runs no cell to fault during. '
            "Hint: after_cell = 2, or fault a cell step") in output_of(result)
