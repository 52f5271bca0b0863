"""A test whose ``hermes_transports(...)`` names none of the run's legs says which it names.

Found by the user-reproduction round (2026-12-06): a ``hermes_transport_drop`` test marked
``hermes_transports("docker", "ssh")``, run with the default ``--hermes-transport=local``, was
skipped as ``no transport of --hermes-transport is selected for this test (hermes_transports
marker)``: neither the legs the marker names nor the run's, nor how to run it (the catalog's
scenario skip named its transports). Now the reason names both and the option that runs it.
"""

from __future__ import annotations

TEST = """
import pytest


@pytest.mark.hermes_transports("docker", "ssh")
def test_remote_only(hermes_kernel):
    pass
"""


def test_the_skip_names_the_markers_legs_and_the_run_s(pytester, run) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_remote=TEST)

    result = run("-q", "-rs", "--hermes-transport=local,filecell")

    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *: no transport of --hermes-transport=local,filecell is selected for "
                                 "this test: its hermes_transports marker names docker, ssh. "
                                 "Hint: run it with --hermes-transport=docker,ssh"])
