"""A failing test's report tells its kernels' story, as a section and as JUnit XML properties
(issue #12 point 1); a passing test's report stays quiet unless ``-rA`` asks.
"""

from __future__ import annotations

import re

import xml.etree.ElementTree as ET

import pytest

SECRET = "canary-7f3c9e1d2b8a4c6e"

SUITE = """
import os

import pytest

@pytest.mark.hermes_kernel(env={"SERVICE_TOKEN": os.environ["STORY_CANARY"]})  # the value is not in the source
def test_fails_after_a_death(hermes_kernel):
    assert hermes_kernel.execute("x = 41").status == "ok"
    r = hermes_kernel.execute("import os\\nos._exit(3)")
    assert r.status == "died"
    hermes_kernel.execute("import os\\nprint(os.environ['SERVICE_TOKEN'])")
    assert False, "the test fails after its kernel died once"

def test_passes(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"
"""


def _sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if "hermes-kernel: kernel " in line]


def _properties(path: str) -> dict[str, dict[str, str]]:
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        cases[case.get("name", "").split("[")[0]] = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
    return cases


def test_a_failing_test_reports_each_kernel_story_and_junit_properties(pytester: pytest.Pytester, run,  # type: ignore[no-untyped-def]
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORY_CANARY", SECRET)
    pytester.makepyfile(test_story=SUITE)
    result = run("--hermes-transport=local", "--junitxml=report.xml")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()

    assert len(_sections(out)) == 1, "one section, for the failing test's one kernel, none for the passing test"
    story = out[out.index("hermes-kernel: kernel "):]
    for fact in ("transport: local", "generation now: 1", "generation 0: worker pid", "generation 1: worker pid",
                 "died", "exit code 3", "cell 1 (generation 0): status=ok", "cell 2 (generation 0): status=died",
                 "runner log (last 20 lines):"):
        assert fact in story, f"{fact!r} missing from the story:\n{story}"
    assert SECRET not in out, "the kernel env's secret reached the terminal report"

    props = _properties(str(pytester.path / "report.xml"))
    failing, passing = props["test_fails_after_a_death"], props["test_passes"]
    assert failing["hermes_kernel.0.transport"] == "local"
    assert failing["hermes_kernel.0.generation"] == "1"
    assert "died" in failing["hermes_kernel.0.losses"] and "exit code 3" in failing["hermes_kernel.0.losses"]
    assert len(failing["hermes_kernel.0.kernel_id"]) == 32
    assert not passing, "a passing test gets no kernel properties"
    assert SECRET not in (pytester.path / "report.xml").read_text(encoding="utf-8")


def test_a_passing_test_tells_its_story_when_asked_with_rA(pytester: pytest.Pytester, run,  # type: ignore[no-untyped-def]
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORY_CANARY", SECRET)
    pytester.makepyfile(test_story=SUITE)
    result = run("--hermes-transport=local", "-rA", "-k", "test_passes")
    result.assert_outcomes(passed=1, deselected=1)
    assert len(_sections(result.stdout.str())) == 1
    assert "cell 1 (generation 0): status=ok" in result.stdout.str()


TEARDOWN_SUITE = """
import pytest

@pytest.fixture
def fails_last():
    yield
    raise RuntimeError("teardown fails after the kernel was shut down")

def test_fails_in_teardown(fails_last, hermes_kernel):
    assert hermes_kernel.execute("x = 1").status == "ok"
"""


def test_a_story_told_after_the_kernel_was_shut_down_still_says_where_it_ran(pytester: pytest.Pytester, run) -> None:  # type: ignore[no-untyped-def]
    """The test fails in a teardown that runs after its kernel's (a fixture's, or the leak check):
    the story names where the kernel ran, not that it never started."""
    pytester.makepyfile(test_story=TEARDOWN_SUITE)
    result = run("--hermes-transport=local")
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    story = out[out.index("hermes-kernel: kernel "):]

    assert "did not start" not in story, story
    where = next(line for line in story.splitlines() if line.startswith("where: "))
    assert where.startswith("where: local") and where.endswith("(shut down)"), where
    assert "runner log (last 20 lines):\n  (none: the kernel was shut down before this report" in story, story
    assert "cell 1 (generation 0): status=ok" in story


RAISED_SUITE = """
import pytest

from pytest_hermes_kernel import HostGoneError, KernelShutdownError

@pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.5)
def test_host_killed_during_a_cell(hermes_kernel):
    hermes_kernel.execute("x = 1")
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("import time; time.sleep(30)")
    assert False, "fails to tell its story"

def test_cell_after_shutdown(hermes_kernel):
    hermes_kernel.execute("x = 1")
    hermes_kernel.shutdown()
    with pytest.raises(KernelShutdownError):
        hermes_kernel.execute("x")
    assert False, "fails to tell its story"
"""


def test_a_cell_that_raised_instead_of_returning_is_in_the_story(pytester: pytest.Pytester, run) -> None:  # type: ignore[no-untyped-def]
    """The cell running when the test's host was SIGKILLed (``HostGoneError``), or sent after a
    shutdown, has no result: the story named only the cells before it."""
    pytester.makepyfile(test_story=RAISED_SUITE)
    result = run("--hermes-transport=local")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    host, shut = out.split("hermes-kernel: kernel ")[1:3]

    assert "cell 1 (generation 0): status=ok" in host
    assert "cell 2 (generation 0): raised HostGoneError: the harness host (pid " in host, host
    # where the harness host had its kernel (a docker kernel's pids are the container's), not only
    # that the record is elsewhere; and its runner log line says it was not read, not log content
    where = re.search(r"^where: local pid (\d+)(, forked by kernel server \d+)? "
                      r"\(launched by the harness host process, pid \d+\)$", host, re.M)
    assert where, host
    assert re.search(rf"^\s*{where.group(1)}: ", host, re.M) or f"runner pid {where.group(1)}" in host, host
    assert "(not read: the launch record is in the harness host process)" in host, host
    assert "cell 2 (generation 0): raised KernelShutdownError: " in shut, shut


REGISTRY_SUITE = """
from pytest_hermes_kernel import KernelKey

def test_tool_fails(hermes_registry):
    alice, bob = KernelKey(owner="alice"), KernelKey(owner="bob")
    assert hermes_registry.execute(alice, "total = 41").status == "ok"
    assert hermes_registry.execute(bob, "import os; os._exit(3)").status == "died"
    assert hermes_registry.execute(alice, "total").value == "42"
"""


def test_a_failing_test_tells_the_story_of_each_kernel_of_its_registry(pytester: pytest.Pytester, run) -> None:  # type: ignore[no-untyped-def]
    """Found by a CI-user helper: an execute_code tool is naturally tested through ``hermes_registry``
    (one kernel per conversation), and its failing test's report had no story and no properties."""
    pytester.makepyfile(test_registry_story=REGISTRY_SUITE)
    result = run("--hermes-transport=local", "--junitxml=report.xml")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()

    assert len(_sections(out)) == 2, out[-4000:]
    assert "cell 1 (generation 0): status=ok" in out and "cell 1 (generation 0): status=died" in out
    assert "exit code 3" in out
    props = _properties(str(pytester.path / "report.xml"))["test_tool_fails"]
    assert {props["hermes_kernel.0.transport"], props["hermes_kernel.1.transport"]} == {"local"}


SURROGATE_SUITE = """
def test_fails(hermes_kernel):
    hermes_kernel.execute("raise ValueError('bad \\\\ud800 here')")
    hermes_kernel.execute("class R:\\n    def __repr__(self): return 'v\\\\udcff'\\nR()")
    assert False
"""


def test_a_story_with_a_lone_surrogate_keeps_its_lines(pytester: pytest.Pytester, run) -> None:  # type: ignore[no-untyped-def]
    """A cell's error holding a lone surrogate reaches the host as it is (JSON-escaped in the frame):
    the story held a str the terminal cannot encode, and pytest wrote the whole section escaped, on
    one line (``transport: local\\nwhere: ...``). Such a character is now written as its escape."""
    pytester.makepyfile(test_story=SURROGATE_SUITE)
    result = run("--hermes-transport=local", "--junitxml=report.xml")
    result.assert_outcomes(failed=1)
    lines = result.stdout.lines

    assert "transport: local" in lines, result.stdout.str()
    assert r"  cell 1 (generation 0): status=error; ValueError: bad \ud800 here" in lines, result.stdout.str()
    cells = _properties(str(pytester.path / "report.xml"))["test_fails"]["hermes_kernel.0.last_cells"]
    assert r"ValueError: bad \ud800 here" in cells, cells
