"""What a backend author sees when the ``hermes_transport`` override that runs the contract suite
on their backend is wrong: one clear line that names the fixture and what it gave, never a
traceback from deep in the kernel core about an attribute of theirs."""

from __future__ import annotations

import pytest

CONFTEST = """
import pytest
from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend
from pytest_hermes_kernel.transports.local import LocalTransport

@pytest.fixture
def hermes_transport():
    yield {given}
"""

#: One kernel case and the backend protocol's first case, twice (it skips on a non-filecell transport).
CASES = "test_namespace_persists_across_cells or test_backend_returns_stdout_and_stderr"


@pytest.mark.parametrize("given, says, hint", [
    ("LocalShellBackend()", "gave a LocalShellBackend", "FileCellTransport(backend)"),
    ("LocalTransport", "gave the class LocalTransport", "an instance"),
    ("None", "gave None", "a Transport"),
], ids=["an-execute-backend", "a-transport-class", "none"])
def test_a_hermes_transport_fixture_that_gives_no_transport_is_named(pytester, run, given, says, hint) -> None:
    pytester.makeconftest(CONFTEST.format(given=given))
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", CASES)

    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0 and outcomes.get("skipped", 0) == 0, result.stdout.str()[-3000:]
    assert outcomes.get("errors", 0) + outcomes.get("failed", 0) == 3, result.stdout.str()[-3000:]
    text = result.stdout.str()
    errors = text.split("short test summary info")[0]  # (the summary repeats each in full when CI is set)
    assert errors.count(f"the hermes_transport fixture {says}, not a Transport") == 3, text[-3000:]
    assert hint in text and "AttributeError" not in text and "Traceback" not in text, text[-3000:]


OVERRIDE = """
import shutil, tempfile
import pytest
from pytest_hermes_kernel.transports import FileCellTransport
from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend

@pytest.fixture
def hermes_transport():
    root = tempfile.mkdtemp(prefix="hermes-backend-")  # a short path: kernel dirs hold sockets
    transport = FileCellTransport(LocalShellBackend(), root=root)
    yield transport
    transport.close()
    shutil.rmtree(root, ignore_errors=True)
"""


def test_the_summary_names_the_transport_of_an_override_the_header_does_not_know(pytester, run) -> None:
    pytester.makeconftest(OVERRIDE)
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", "test_namespace_persists_across_cells")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= hermes-kernel summary =*",
                                 "hermes_transport overridden by conftest.py:*: its tests ran on the filecell transport"])
    assert "contract suite ran on the built-in" not in result.stdout.str()


def test_a_contract_run_whose_override_was_not_picked_up_says_it_ran_on_a_built_in_transport(pytester, run) -> None:
    """The backend's conftest.py sits where pytest does not read it (a sibling dir): the suite runs
    green on the local transport, and only the summary can tell the author it was not theirs."""
    pytester.mkdir("backend").joinpath("conftest.py").write_text(OVERRIDE)
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", "test_namespace_persists_across_cells", "test_contract.py")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= hermes-kernel summary =*", "contract suite ran on the built-in local transport "
                                 "(--hermes-transport), with no hermes_transport override: *"])
    assert "hermes_transport overridden" not in result.stdout.str()


REGISTERED = """
import atexit, shutil, tempfile
from pytest_hermes_kernel.transports import FileCellTransport, register_transport
from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend

def make_sandbox(**options):
    root = tempfile.mkdtemp(prefix="hermes-backend-")  # a short path: kernel dirs hold sockets
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return FileCellTransport(LocalShellBackend(), root=root, **options)

register_transport("sandbox", make_sandbox)
"""


def test_a_contract_run_on_a_registered_transport_is_not_said_to_run_on_a_built_in_one(pytester, run) -> None:
    """A backend registered with ``register_transport("sandbox", ...)`` and selected with
    ``--hermes-transport=sandbox`` is the author's own: the summary said the suite ran on "the
    built-in filecell transport ... with no hermes_transport override" (the name its class gives),
    telling the author that their backend had not run."""
    pytester.makeconftest(REGISTERED)
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", "test_namespace_persists_across_cells", "--hermes-transport=sandbox")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= hermes-kernel summary =*"])
    assert "ran on the built-in" not in result.stdout.str(), result.stdout.str()


LEAKY = """
import pytest
from pytest_hermes_kernel.transports.local import LocalTransport

class NoCleanup(LocalTransport):
    def cleanup(self, launched):
        pass  # the lie: a killed kernel's dir (its token, its socket) stays

@pytest.fixture
def hermes_transport():
    transport = NoCleanup(server=False)
    yield transport
    transport.close()
"""


def test_a_backend_that_leaks_fails_the_contract_case_under_the_default_leak_check(pytester, run) -> None:
    """Under the default ``--hermes-leak-check=warn`` a leak is a warning: a backend whose kill left
    every killed kernel's dir behind passed the whole contract suite green ("3 warnings")."""
    pytester.makeconftest(LEAKY)
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n",
                        test_own="def test_not_a_contract_case(hermes_kernel):\n"
                                 "    hermes_kernel.transport.kill(hermes_kernel.launched)\n")

    result = run("-q", "-k", "test_a_runner_is_seen_gone_only_once_it_ended or test_not_a_contract_case")

    result.assert_outcomes(passed=2, errors=1, warnings=1)  # the user's own test keeps the run's setting
    result.stdout.fnmatch_lines(["*LeakError: test_contract.py::test_a_runner_is_seen_gone_only_once_it_ended: *",
                                 "*leaked kernel dir*"])
    assert "HermesLeakWarning: test_own.py::test_not_a_contract_case" in result.stdout.str()
