"""A ``hermes_host_sigkill`` test on docker or ssh leaves no container behind: the harness host
that started the run's kernel host (or sshd) container was its only member, so once SIGKILLed
nobody removed it at the run's end (found by following README walkthrough 2 with
``--hermes-transport=docker``: a ``hermes-kernel-host`` container and the run's dir outlived
pytest, passing or failing), and another run's start-up sweep could take it mid-test."""

from __future__ import annotations

import uuid

import pytest

from tests.support import run_containers

pytestmark = pytest.mark.usefixtures("docker_ready")

HOST_KILLED = """
import pytest
from pytest_hermes_kernel import HostGoneError

@pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.5)
def test_the_helper_dies_with_its_host(hermes_kernel):
    hermes_kernel.execute("import subprocess; subprocess.Popen(['sleep', '300'])")
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("import time; time.sleep(30)")
"""


@pytest.mark.parametrize("transport", ["docker", "ssh"])
def test_a_sigkilled_hosts_run_leaves_no_container(pytester: pytest.Pytester, run, transport: str) -> None:  # type: ignore[no-untyped-def]
    run_id = f"hostkill-{uuid.uuid4().hex[:12]}"
    pytester.makepyfile(test_host_killed=HOST_KILLED)

    result = run(f"--hermes-transport={transport}", f"--hermes-run-id={run_id}", "--hermes-leak-check=error")

    result.assert_outcomes(passed=1)
    left = run_containers(run_id)
    assert not left, f"containers of the run left behind: {[c['Id'][:12] for c in left]}"
