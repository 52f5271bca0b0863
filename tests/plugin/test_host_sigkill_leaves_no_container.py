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

@pytest.mark.hermes_kernel(orphan_timeout=1.0)  # its end is waited for: not the marker's 5 s
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


HELD_AFTER_THE_KILL = """
import subprocess, sys

import docker
import pytest
from pytest_hermes_kernel import HostGoneError
from pytest_hermes_kernel.containers.labels import LABEL_RUN_ID
from pytest_hermes_kernel.containers.sharing import current_run_id

@pytest.mark.hermes_kernel(orphan_timeout=1.0)  # its end is waited for: not the marker's 5 s
@pytest.mark.hermes_host_sigkill(after_cell=1)
def test_the_runs_container_is_held_once_its_host_died(hermes_kernel):
    hermes_kernel.execute("1")
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("2")
    client = docker.from_env()
    ours = [c["Id"][:12] for c in client.api.containers(filters={"label": f"{LABEL_RUN_ID}={current_run_id()}"})]
    client.close()
    assert ours
    sweep = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", "--dry-run", "containers"],
                           capture_output=True, text=True, timeout=120).stdout
    assert not [c for c in ours if f"would remove container {c}" in sweep], sweep
"""


@pytest.mark.parametrize("transport", ["docker", "ssh"])
def test_a_run_with_an_image_of_its_own_holds_its_container_once_the_host_died(pytester: pytest.Pytester, run,  # type: ignore[no-untyped-def]
                                                                                transport: str) -> None:
    """With ``--hermes-image`` (or ``--hermes-reuse``) the harness host is given the run's transport
    options, and this process did not join the run's container as it does without them: with the
    SIGKILLed host its only member, another run's sweep would take it mid-test (``no live process
    uses it``), and it outlived the run (1 inner run in 3)."""
    pytester.makepyfile(test_held=HELD_AFTER_THE_KILL)
    result = run(f"--hermes-transport={transport}", "--hermes-image=hermes-kernel-host:latest",
                 "--hermes-leak-check=error")
    result.assert_outcomes(passed=1)
