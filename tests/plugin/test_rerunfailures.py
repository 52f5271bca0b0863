"""pytest-rerunfailures (``--reruns N``) runs one test item again: each attempt gets fresh
kernels, and each attempt's report tells its own kernels' story.

Before: the story of a test was told once per item, so the final failure of a test rerun twice
had no ``hermes-kernel: kernel`` section, and its JUnit XML properties named the first attempt's
kernel (in every attempt's test case).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

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
    assert len(cases) == 3 and all(len(i) == 1 for i in ids), ids
    assert len({i[0] for i in ids}) == 3, f"each attempt ran on a fresh kernel and names it: {ids}"
    assert ids[-1] == [final[-1]], f"the failing case's properties name the kernel it failed on: {ids}"
