"""An execute-only backend that strips its output (``text.strip()``, as some sandbox APIs do).

Before, README's walkthrough 1 with that one change passed the contract suite green, 90 passed,
with a ``HermesLeakCheckIncompleteWarning`` in 72 cases: every leak scan through the backend came
back unreadable (its last line lost its newline), so no case's leak check looked at the backend's
kernels at all. Now the backend protocol has a case for it, and a contract case whose own
transport the leak check could not look through errors, saying the backend is the cause.
"""

from __future__ import annotations

OVERRIDE = """
import os, shutil, signal, subprocess, tempfile
import pytest
from pytest_hermes_kernel.transports import FileCellTransport


class StrippingSandbox:
    \"\"\"README's walkthrough-1 backend, but its answer is ``text.strip()``.\"\"\"

    def execute(self, cmd, timeout):
        with tempfile.TemporaryDirectory() as tmp:
            script, output = os.path.join(tmp, "cmd.sh"), os.path.join(tmp, "out")
            with open(script, "w", encoding="utf-8") as fh:
                fh.write(cmd)
            with open(output, "wb") as out:
                proc = subprocess.Popen(["sh", script], stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return 124, ""
            with open(output, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        return (128 - code if code < 0 else code), text.strip()


@pytest.fixture
def hermes_transport():
    root = tempfile.mkdtemp(prefix="hermes-backend-")  # a short path: kernel dirs hold sockets
    transport = FileCellTransport(StrippingSandbox(), root=root)
    yield transport
    transport.close()
    shutil.rmtree(root, ignore_errors=True)
"""


def test_the_protocol_case_names_a_stripped_output(pytester, run) -> None:
    pytester.makeconftest(OVERRIDE)
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", "test_backend_returns_the_output_unchanged")

    result.assert_outcomes(failed=1)
    assert "execute returned 'lead\\ttab\\n\\nlast line' for output" in result.stdout.str(), result.stdout.str()[-3000:]
    assert "no strip()" in result.stdout.str()


def test_a_kernel_case_whose_leak_check_cannot_look_through_the_backend_errors(pytester, run) -> None:
    pytester.makeconftest(OVERRIDE)
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", "test_namespace_persists_across_cells")

    result.assert_outcomes(passed=1, errors=1)
    text = result.stdout.str()
    assert "LeakError: test_contract.py::test_namespace_persists_across_cells: the leak check could not look" in text, \
        text[-3000:]
    assert "the leak check looks through the backend under test" in text, text[-3000:]


def test_outside_the_contract_it_stays_a_warning(pytester, run) -> None:
    """A user's own test on that transport is not judging the backend: the check says what it
    could not see, as a warning, as before."""
    pytester.makeconftest(OVERRIDE)
    pytester.makepyfile(test_mine="def test_it(hermes_kernel):\n    assert hermes_kernel.execute('1').value == '1'\n")

    result = run("-q")

    result.assert_outcomes(passed=1)
    assert "HermesLeakCheckIncompleteWarning" in result.stdout.str(), result.stdout.str()[-3000:]
