"""pytest-rerunfailures (``--reruns N``) runs one test item again: each attempt gets fresh
kernels, each attempt's report tells its own kernels' story, and a kernel kept for post-mortem
names its attempt.

Before: the story of a test was told once per item, so the final failure of a test rerun twice
had no ``hermes-kernel: kernel`` section, and its JUnit XML properties named the first attempt's
kernel (in every attempt's test case).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from tests.plugin.test_keep_failed import hermes, kept_env  # noqa: F401 - kept_env is a fixture

pytest.importorskip("pytest_rerunfailures", reason="needs pytest-rerunfailures (the dev extra)")

SUITE = """
def test_always_fails(hermes_kernel):
    hermes_kernel.execute("z = 3")
    assert False, f"attempt on kernel {hermes_kernel.kernel_id}"
"""


def test_each_attempt_tells_its_own_kernels_story(pytester: pytest.Pytester, run) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_flaky=SUITE)
    result = run("--hermes-transport=local", "-p", "no:randomly", "--reruns", "2", "--junitxml=report.xml")
    assert result.parseoutcomes() == {"failed": 1, "rerun": 2}, result.stdout.str()
    out = result.stdout.str()
    final = re.findall(r"AssertionError: attempt on kernel ([0-9a-f]{32})", out)
    assert final, out
    sections = re.findall(r"hermes-kernel: kernel ([0-9a-f]{32})", out)
    assert sections == [final[-1]], f"the final failure's report tells its own kernel's story:\n{out}"
    assert "cell 1 (generation 0): status=ok" in out[out.index("hermes-kernel: kernel "):], out

    cases = list(ET.parse(str(pytester.path / "report.xml")).getroot().iter("testcase"))
    ids = [[p.get("value") for p in case.iter("property") if p.get("name") == "hermes_kernel.0.kernel_id"]
           for case in cases]
    if pytest.version_tuple < (9, 2):  # before 9.2 pytest's JUnit XML keeps one case per item: the last attempt's
        assert ids == [[final[-1]]], f"the item's one case names the kernel it failed on: {ids}"
        return
    assert len(cases) == 3 and all(len(i) == 1 for i in ids), ids
    assert len({i[0] for i in ids}) == 3, f"each attempt ran on a fresh kernel and names it: {ids}"
    assert ids[-1] == [final[-1]], f"the failing case's properties name the kernel it failed on: {ids}"


FLAKY = """
from pathlib import Path

RUNS = Path(__file__).with_name("runs.txt")


def test_passes_on_its_third_attempt(hermes_kernel):
    n = int(RUNS.read_text()) if RUNS.exists() else 0
    RUNS.write_text(str(n + 1))
    hermes_kernel.execute("rows = [1, 2]")
    assert n >= 2, "a flake"
"""


def test_a_kept_kernel_names_the_attempt_it_failed_in(pytester: pytest.Pytester, run,  # type: ignore[no-untyped-def]
                                                      kept_env) -> None:  # noqa: F811 - the fixture, imported
    """``--hermes-keep-failed`` keeps each failed attempt's kernels, also of a test that passed on a
    later one: the summary says which attempt each is of. Before, it listed two kernels "kept for
    post-mortem: test_x[local]" under a run that said ``1 passed``, as if the test had failed."""
    pytester.makepyfile(test_flaky=FLAKY)
    result = run("--hermes-transport=local", "-p", "no:randomly", "--reruns", "2", "--hermes-keep-failed")
    assert result.parseoutcomes() == {"passed": 1, "rerun": 2}, result.stdout.str()
    kept = [line for line in result.stdout.lines if line.startswith("kept for post-mortem:")]
    node = "test_flaky.py::test_passes_on_its_third_attempt[local]"
    assert [line.split(": kernel ")[0] for line in kept] == [
        f"kept for post-mortem: {node} (attempt 1 under --reruns)",
        f"kept for post-mortem: {node} (attempt 2 under --reruns)"], result.stdout.str()
    listed = hermes("ls", "--ids", "--test", node.partition("[")[0])
    assert len(listed.stdout.split()) == 2, listed  # the records keep the plain node id: `ls --test` finds both
