"""A scenario whose ``transports`` names no leg of the run says so: one item skipped with the
reason, as a test whose ``hermes_transports(...)`` marker names none of them. It was collected as
nothing at all: ``pytest fixtures/ --hermes-transport=local`` left the docker-and-ssh-only
scenario out without a word (a one-leg-per-job CI matrix never saw it in its local job), and
``pytest fixtures/that.toml`` said only ``no tests ran``."""

from __future__ import annotations

from tests.support import output_of

SCENARIO = '[scenario]\nname = "drop"\nsource = "test"\ntransports = ["docker", "ssh"]\n\n[[cell]]\ncode = "1"\n'


def test_a_scenario_for_no_leg_of_the_run_is_one_skip_with_the_reason(pytester, run):
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "drop.toml").write_text(SCENARIO)

    result = run("fixtures", "--hermes-transport=local", "-rs")

    result.assert_outcomes(skipped=1)
    text = output_of(result)
    assert ("SKIPPED [1] fixtures/drop.toml:1: no transport of --hermes-transport is selected for this scenario (its "
            "transports: docker, ssh)" in text), text


def test_a_scenario_for_some_legs_of_the_run_runs_on_those_only(pytester, run):
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "some.toml").write_text(SCENARIO.replace('"docker", "ssh"', '"local", "ssh"'))

    result = run("fixtures", "--hermes-transport=local,filecell", "-v")

    result.assert_outcomes(passed=1)
    assert "some.toml::drop[local] PASSED" in output_of(result)


DROP = ('[scenario]\nname = "NAME"\n\n[[fault]]\nkind = "transport_drop"\nmode = "reset"\nafter_cell = 1\n\n'
        '[[cell]]\ncode = "x = 41"\n\n[[cell]]\ncode = "x + 1"\nexpect = { value = "42" }\n')


def test_a_scenario_whose_fault_cannot_apply_on_a_leg_skips_at_its_own_file(pytester, run):
    """Such a skip was located in the plugin's module (``scenarios.py:195``): under ``-rs`` the
    skips of every scenario with that fault folded into one line that named none of them."""
    pytester.mkdir("fixtures")
    for name in ("first", "second"):
        pytester.path.joinpath("fixtures", f"{name}.toml").write_text(DROP.replace("NAME", name))

    result = run("fixtures", "--hermes-transport=local", "-rs")

    result.assert_outcomes(skipped=2)
    text = output_of(result)
    for name in ("first", "second"):
        assert f"SKIPPED [1] fixtures/{name}.toml:1: transport_drop does not apply to the local transport" in text, text
