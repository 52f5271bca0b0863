"""A leak check that looks again (something else still looked leaked) still names a closed backend
it could not look through.

Before, ``test_a_backend_that_strips_its_output.py::test_outside_the_contract_it_stays_a_warning``
passed once in a loaded clean-clone run with no ``HermesLeakCheckIncompleteWarning``: the check's
first look could not read the stripping backend's scan and saw something else that was ending (a
thread); it looked again, and a closed transport is probed once more only while it shows
something, so the second look did not look through the backend at all, found nothing, and the
check passed blind. Here the other thing is a thread that ends when the backend's scan runs, so
the check always looks twice.
"""

from __future__ import annotations

from tests.plugin.test_a_backend_that_strips_its_output import OVERRIDE

ENDS_AT_THE_SCAN = OVERRIDE + """
import threading

SCANNED = threading.Event()
_execute = StrippingSandbox.execute


def _noting_the_scan(self, cmd, timeout):
    if "hermes-scan-end" in cmd:  # the leak check's scan (SCAN_END_CODE)
        SCANNED.set()
    return _execute(self, cmd, timeout)


StrippingSandbox.execute = _noting_the_scan


@pytest.fixture
def ends_at_the_scan():
    \"\"\"A thread still there at the check's first look, gone soon after its scan.\"\"\"
    thread = threading.Thread(target=SCANNED.wait, args=(60.0,), name="ends-at-the-scan", daemon=True)
    thread.start()
    return thread
"""


def test_the_check_after_a_second_look_still_says_what_it_could_not_see(pytester, run) -> None:
    pytester.makeconftest(ENDS_AT_THE_SCAN)
    pytester.makepyfile(test_mine="def test_it(hermes_kernel, ends_at_the_scan):\n"
                                  "    assert hermes_kernel.execute('1').value == '1'\n")

    result = run("-q", "-W", "always")

    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "HermesLeakCheckIncompleteWarning" in text and "the kernel scan through" in text, text[-3000:]
    assert "leak checks incomplete: 1 tests" in text, text[-3000:]
