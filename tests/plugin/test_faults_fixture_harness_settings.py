"""``hermes_faults.harness(name)`` runs its kernel on a transport with the run's settings, as the
kernel fixtures' kernels run: it ran in the kit's default image whatever ``--hermes-image`` said
(and on an sshd container of its own under ``--hermes-ssh-targets``), and the test passed."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("docker_ready")

HARNESS = """
def test_harness(hermes_faults):
    kernel = hermes_faults.harness("docker", orphan_timeout=3)
    assert kernel.execute("1 + 1").value == "2"
"""


def test_the_harness_of_the_faults_fixture_runs_in_the_runs_image(pytester: pytest.Pytester, run) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_harness=HARNESS)
    result = run("--hermes-transport=docker", "--hermes-image=no-such-image:1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*image no-such-image:1 is not on the docker engine*"])
