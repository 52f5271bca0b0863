"""One kernel for several tests: what an agent's session-persistent kernel looks like in a suite.

Hold the kernel (or a registry of them) in a module- or session-scoped fixture. The leak check
then counts it as the fixture's for as long as the fixture lives, including a kernel the
registry starts later in a test and the new worker of a restart; it checks the kernel is gone
once pytest tears the fixture down.

The tests of this file run in order and share state on purpose (``-p no:randomly`` if you use
a plugin that shuffles them). Under pytest-xdist each worker has its own session and module
fixtures, so they must run in one worker: ``--dist loadfile`` (or ``loadscope``). Under the
default ``load`` distribution they skip, saying so (``xdist_group`` with ``--dist loadgroup`` does
not group with pytest 9.2: pytest-dev/pytest-xdist#1386). These fixtures are outside the
``--hermes-transport`` matrix: name a transport in ``start_kernel(...)`` or
``KernelKey(..., transport="docker")``.
"""

import os

import pytest

from pytest_hermes_kernel import KernelKey, KernelRegistry, start_kernel


@pytest.fixture(autouse=True, scope="module")
def one_worker(request):
    """Skip where pytest-xdist may spread this file's tests over several workers."""
    if not hasattr(request.config, "workerinput"):
        return  # one process
    # a worker's own --dist reads "no": the controller's is in its argv, the ini's addopts or PYTEST_ADDOPTS
    argv = " ".join([*request.config.workerinput["mainargv"], *request.config.getini("addopts"),
                     os.environ.get("PYTEST_ADDOPTS", "")])
    if "loadfile" not in argv and "loadscope" not in argv:
        pytest.skip("these tests share one kernel: run them in one process or with --dist loadfile")


@pytest.fixture(scope="module")
def kernel():
    with start_kernel("local") as k:  # shut down once the module's last test is done
        yield k


@pytest.fixture(scope="session")
def registry():
    with KernelRegistry() as reg:  # one kernel per key, started by the first cell that needs it
        yield reg


def test_a_cell_defines_a_name(kernel):
    assert kernel.execute("rows = [1, 2, 3]").status == "ok"


def test_a_later_test_sees_it(kernel):
    assert kernel.execute("sum(rows)").value == "6"


def test_a_restart_loses_the_names_and_says_so(kernel):
    kernel.restart()

    result = kernel.execute("'rows' in globals()")

    assert result.value == "False" and result.kernel.state_lost and result.kernel.reason == "reset"


def test_an_agents_kernel_starts_on_its_first_cell(registry):
    agent = KernelKey(owner="agent-1")

    assert registry.execute(agent, "notes = ['started']").status == "ok"


def test_and_is_still_there_for_its_next_call(registry):
    result = registry.execute(KernelKey(owner="agent-1"), "notes.append('again'); notes")

    assert result.value == "['started', 'again']" and not result.kernel.state_lost
