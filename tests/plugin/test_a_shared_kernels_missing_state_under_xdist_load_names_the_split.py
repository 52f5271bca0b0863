"""A test that reads what another test left in a shared kernel (a session-scoped registry, a
module-scoped kernel: README "One kernel for several tests") fails under ``-n 2`` with xdist's
default ``--dist load`` (or ``worksteal``): the tests ran on different workers, each with its own
fixture and kernel. The failure said only ``NameError: name 'notes' is not defined``; its report
now names the fixture, the split and the fix (``--dist loadfile``). A failure that is not a
missing name, key or attribute on such a kernel, and any failure without xdist or under
``loadfile``, gets no such section."""

from __future__ import annotations

import pytest

pytest.importorskip("xdist")

TITLE = "hermes-kernel: a shared kernel under pytest-xdist"

README_EXAMPLE = """
import pytest
from pytest_hermes_kernel import KernelKey, KernelRegistry

@pytest.fixture(scope="session")
def registry():
    with KernelRegistry() as reg:
        yield reg

def test_first_call(registry):
    assert registry.execute(KernelKey(owner="agent-1"), "notes = ['started']").status == "ok"

def test_next_call(registry):
    result = registry.execute(KernelKey(owner="agent-1"), "len(notes)")
    assert result.value == "1", result.summary()  # the cell's error, if there was one
"""

MODULE_KERNEL = """
import pytest
from pytest_hermes_kernel import start_kernel

@pytest.fixture(scope="module")
def kernel():
    with start_kernel("local") as k:
        k.execute("state = {}")
        yield k

def test_a_cell_fills_the_state(kernel):
    assert kernel.execute("state['rows'] = 3").status == "ok"

def test_a_later_test_reads_it(kernel):
    result = kernel.execute("state['rows']")
    assert result.value == "3", result.summary()
"""

UNRELATED_FAILURES = """
import pytest
from pytest_hermes_kernel import start_kernel

@pytest.fixture(scope="module")
def kernel():
    with start_kernel("local") as k:
        yield k

def test_a_wrong_value(kernel):
    assert kernel.execute("1 + 1").value == "3"

def test_a_cell_that_divides_by_zero(kernel):
    result = kernel.execute("1 / 0")
    assert result.status == "ok", result.summary()
"""

NEVER_SET = """
import pytest
from pytest_hermes_kernel import KernelKey, KernelRegistry

@pytest.fixture(scope="session")
def registry():
    with KernelRegistry() as reg:
        yield reg

def test_reads_a_name_no_test_set(registry):
    result = registry.execute(KernelKey(owner="agent-1"), "len(never_set)")
    assert result.value == "0", result.summary()

def test_another(registry):
    assert registry.execute(KernelKey(owner="agent-1"), "1").value == "1"
"""


@pytest.mark.parametrize(("source", "args", "fixture", "error"), [
    (README_EXAMPLE, ("--dist", "load"), "'registry' (scope session)", "NameError: name 'notes' is not defined"),
    (MODULE_KERNEL, ("--dist", "worksteal", "--hermes-leak-check=off"), "'kernel' (scope module)", "KeyError: 'rows'"),
], ids=["readme-registry-load", "module-kernel-worksteal-no-leak-check"])
def test_the_failure_names_the_fixture_the_split_and_the_fix(pytester, run, source, args, fixture, error):
    pytester.makepyfile(test_shared=source)

    result = run("-n", "2", *args)

    result.assert_outcomes(passed=1, failed=1)  # one test a worker: the second found no state
    dist = args[1]
    result.stdout.fnmatch_lines([
        f"*{TITLE}*",
        f"fixture {fixture} holds kernel *, whose cell raised {error}",
        f"That kernel is this worker's (gw?) own: under -n 2 with --dist {dist}, pytest-xdist runs one module's "
        "tests on different workers*Run the tests that share a kernel in one worker: --dist loadfile (or "
        "loadscope). README: One kernel for several tests.",
    ])
    assert result.stdout.str().count(TITLE) == 1


def test_the_readme_example_passes_under_loadfile(pytester, run):
    pytester.makepyfile(test_shared=README_EXAMPLE)

    result = run("-n", "2", "--dist", "loadfile")

    result.assert_outcomes(passed=2)
    assert TITLE not in result.stdout.str()


def test_a_failure_that_is_not_missing_state_gets_no_hint(pytester, run):
    pytester.makepyfile(test_unrelated=UNRELATED_FAILURES)

    result = run("-n", "2", "--dist", "load")

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*assert '2' == '3'*"])  # (in the order the workers reported them)
    result.stdout.fnmatch_lines(["*ZeroDivisionError: division by zero*"])
    assert TITLE not in result.stdout.str()


@pytest.mark.parametrize("args", [(), ("-n", "2", "--dist", "loadfile")], ids=["no-xdist", "loadfile"])
def test_a_missing_name_where_the_module_runs_in_one_process_gets_no_hint(pytester, run, args):
    pytester.makepyfile(test_never_set=NEVER_SET)

    result = run(*args)

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*NameError: name 'never_set' is not defined*"])
    assert TITLE not in result.stdout.str()
