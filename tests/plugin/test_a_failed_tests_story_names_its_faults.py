"""A failed test's kernel story says which fault fired and what the cell it hit came back as.

Found by the user-reproduction round (2026-12-06): a user's own wrapper restarted the kernel when
a result said ``kernel.reconnected=True``, losing its state. The test failed on ``NameError``, and
its kernel's story said ``cell 2 (generation 0): status=ok``: nothing of the transport drop the
``hermes_transport_drop`` marker had fired during cell 2, nor that the cell came back re-attached,
so the report did not show why the wrapper restarted. Now the story lists each fault that fired
(``faults fired:``, the cell and mode; JUnit's ``hermes_kernel.<n>.faults``) and a cell's line says ``reconnected`` (and its
``watchdog=...`` outcome, the same in ``CellResult.summary()``).
"""

from __future__ import annotations

import pytest

from tests.plugin.test_failing_report_story import _properties

TEST = """
import pytest


class Wrapper:  # the user's code under test: a drop read as a kernel to replace
    def __init__(self, kernel):
        self.kernel = kernel

    def run(self, code):
        r = self.kernel.execute(code)
        if r.kernel.reconnected:
            self.kernel.restart()
        return r


@pytest.mark.hermes_transport_drop(mode="reset", during_cell=2, delay=0.3)
def test_drop(hermes_kernel):
    w = Wrapper(hermes_kernel)
    w.run("notes = ['a']")
    w.run("import time; time.sleep(1.5); notes.append('b')")
    assert w.run("notes").value == "['a', 'b']"
"""


def test_the_story_of_a_dropped_cell_names_the_drop_and_the_reattach(pytester, run) -> None:
    pytester.makepyfile(test_drop=TEST)

    result = run("-q", "--hermes-transport=docker", "--hermes-leak-check=error", "--junitxml=report.xml")

    out = result.stdout.str()
    result.assert_outcomes(failed=1)
    assert "faults fired:" in out and "transport_drop(mode='reset') during cell 2" in out, out[-3000:]
    assert "cell 2 (generation 0): status=ok; reconnected" in out, out[-3000:]
    props = _properties(str(pytester.path / "report.xml"))["test_drop"]  # the JUnit facts say it too
    assert props["hermes_kernel.0.faults"].startswith("transport_drop(mode='reset') during cell 2"), props


def test_a_results_summary_says_reconnected_and_its_watchdog() -> None:
    from pytest_hermes_kernel.kernel.results import CellResult, KernelInfo

    r = CellResult(status="ok", kernel=KernelInfo(kernel_id="k", transport="docker", reconnected=True))
    assert r.summary() == "status=ok; reconnected"
    t = CellResult(status="timeout", watchdog="interrupted", kernel=KernelInfo(kernel_id="k", transport="local"))
    assert t.summary() == "status=timeout; watchdog=interrupted"
