"""A transport of one's own that builds the runner's config itself and leaves out
``oom_counter_file`` (the ``hermes_oom`` limit's OOM-kill counter): its kernels run under the
limit (``cgroup_procs`` is there), but every OOM kill on it read ``reason=died``, "killed by
signal 9". The contract suite had no OOM case and passed it whole. Now its
``test_a_cell_past_the_memory_limit_is_reported_oom_killed`` fails, naming the config key.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.faults.cgroup import create_memory_cgroup

CONFTEST = """
import dataclasses
import pytest
from pytest_hermes_kernel.transports.local import LocalTransport


class Mine(LocalTransport):
    def launch(self, spec):
        config = {{k: v for k, v in spec.config.items() if k not in {dropped!r}}}
        return super().launch(dataclasses.replace(spec, config=config))

    def __repr__(self):
        return "Mine()"


@pytest.fixture
def hermes_transport():
    t = Mine(server=False)
    yield t
    t.close()
"""

CASE = "test_a_cell_past_the_memory_limit_is_reported_oom_killed"


@pytest.fixture(autouse=True)
def _memory_cgroup() -> None:
    try:
        create_memory_cgroup(128 * 2**20).remove()
    except TransportUnavailableError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")


def test_the_oom_case_fails_a_transport_that_drops_the_oom_counter(pytester, run) -> None:
    pytester.makeconftest(CONFTEST.format(dropped=("oom_counter_file",)))
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", CASE)

    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "must be reported oom_killed, not as a plain death: status=died" in text, text[-3000:]
    assert "LaunchSpec.config['oom_counter_file']" in text, text[-3000:]


def test_the_oom_case_passes_a_transport_that_hands_the_whole_config(pytester, run) -> None:
    pytester.makeconftest(CONFTEST.format(dropped=()))
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    run("-q", "-k", CASE).assert_outcomes(passed=1)
