"""A transport of one's own that builds the runner's config itself and names the wrong
``oom_counter_file`` (the ``hermes_oom`` limit's OOM-kill counter; here a sibling cgroup's, as a
transport that keeps a pool cgroup of its own might): its kernels run under the limit
(``cgroup_procs`` is there), but every OOM kill on it read ``reason=died``, "killed by signal 9".
The contract suite had no OOM case and passed it whole. Now its
``test_a_cell_past_the_memory_limit_is_reported_oom_killed`` fails, naming the config key.

A transport that leaves the counter out passes: the runner reads the counter beside
``cgroup_procs`` (``tests/regressions/test_an_oom_kill_is_read_from_the_cgroup_the_worker_joins.py``;
before that it passed or failed by timing).
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
    decoy = None  # a memory cgroup no kernel runs in: its counter never moves

    def launch(self, spec):
        config = {{k: v for k, v in spec.config.items() if k not in {dropped!r}}}
        if {decoy!r} and "oom_counter_file" in config:
            config["oom_counter_file"] = self.decoy.oom_counter_file
        return super().launch(dataclasses.replace(spec, config=config))

    def __repr__(self):
        return "Mine()"


@pytest.fixture
def hermes_transport():
    from pytest_hermes_kernel.faults.cgroup import create_memory_cgroup

    t = Mine(server=False)
    t.decoy = create_memory_cgroup(128 * 2**20) if {decoy!r} else None
    yield t
    t.close()
    if t.decoy is not None:
        t.decoy.remove()
"""

CASE = "test_a_cell_past_the_memory_limit_is_reported_oom_killed"


@pytest.fixture(autouse=True)
def _memory_cgroup() -> None:
    try:
        create_memory_cgroup(128 * 2**20).remove()
    except TransportUnavailableError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")


def test_the_oom_case_fails_a_transport_that_names_another_cgroups_counter(pytester, run) -> None:
    pytester.makeconftest(CONFTEST.format(dropped=(), decoy=True))
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", CASE)

    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "must be reported oom_killed, not as a plain death: status=died" in text, text[-3000:]
    assert "LaunchSpec.config['oom_counter_file']" in text, text[-3000:]


@pytest.mark.parametrize("dropped", [(), ("oom_counter_file",)], ids=["whole-config", "no-counter"])
def test_the_oom_case_passes_a_transport_whose_runner_can_read_the_limits_counter(pytester, run, dropped) -> None:
    pytester.makeconftest(CONFTEST.format(dropped=dropped, decoy=False))
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    run("-q", "-k", CASE).assert_outcomes(passed=1)
