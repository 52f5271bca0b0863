"""``hermes_oom`` on a backend that does not hand the launch's config to the runner whole.

A transport of the user's own that builds its own runner config and leaves out ``cgroup_procs``
runs the kernel without the memory cgroup. Before, nothing said so: a test that allocated
little passed under the marker, and one that hogged memory ran to its cell timeout and failed
as ``timeout`` (60 s), never naming the limit. Now the test errors at setup, naming the
transport, the worker and the cgroup it is not in.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.faults.cgroup import create_memory_cgroup

CONFTEST = """
import dataclasses
from pytest_hermes_kernel.transports import register_transport
from pytest_hermes_kernel.transports.local import LocalTransport


class Mine(LocalTransport):
    name = "mine"

    def launch(self, spec):
        config = {k: v for k, v in spec.config.items() if k != "cgroup_procs"{keep}}
        return super().launch(dataclasses.replace(spec, config=config))

    def __repr__(self):
        return "Mine()"


register_transport("mine", Mine)
"""

TEST = """
import pytest


@pytest.mark.hermes_oom(limit_bytes=64 * 2**20)
def test_under_a_limit(hermes_kernel):
    assert hermes_kernel.execute("x = 1").status == "ok"
"""


@pytest.fixture(autouse=True)
def _memory_cgroup() -> None:
    try:
        create_memory_cgroup(64 * 2**20).remove()
    except TransportUnavailableError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")


def test_a_kernel_started_outside_the_memory_cgroup_errors_naming_it(pytester, run) -> None:
    pytester.makeconftest(CONFTEST.replace("{keep}", ""))
    pytester.makepyfile(test_it=TEST)

    result = run("-q", "--hermes-transport=mine", "--hermes-leak-check=error")

    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "Mine(): hermes_oom's kernel runs without its memory limit: its worker (pid " in text, text[-3000:]
    assert "is not in the memory cgroup /sys/fs/cgroup/" in text and "cgroup_procs" in text, text[-3000:]


def test_a_transport_that_keeps_the_config_passes(pytester, run) -> None:
    pytester.makeconftest(CONFTEST.replace("{keep}", ' or True'))
    pytester.makepyfile(test_it=TEST)

    run("-q", "--hermes-transport=mine", "--hermes-leak-check=error").assert_outcomes(passed=1)
