"""A scenario's ``[expect_end] processes = N`` counts the kernels it started that still have a
live process, wherever they run. It counted the live runners of the kernels left in the registry
only: after a ``shutdown_owner`` step the registry is empty, so ``processes = 0`` (the catalog's
B15, a leftover thread must not keep a kernel alive past shutdown) could never fail, and passed
with a kernel that outlived its shutdown."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from tests.support import output_of

REPO = Path(__file__).resolve().parents[2]

SHUTDOWN_LEAVES_IT_RUNNING = """
from pytest_hermes_kernel.kernel.handle import KernelHandle

LEFT = []  # referenced: its channel stays open, so its runner (and worker) run on until pytest exits

def shutdown(self, *args, **kwargs):  # the bug put back: the kernel is dropped, not ended
    LEFT.append(self)

KernelHandle.shutdown = shutdown
"""


def test_a_kernel_that_outlives_its_shutdown_fails_processes_0(pytester, run, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.mkdir("fixtures")
    shutil.copy(REPO / "fixtures" / "b15_thread_does_not_block_shutdown.toml", pytester.path / "fixtures")
    pytester.makepyfile(bugpatch=textwrap.dedent(SHUTDOWN_LEAVES_IT_RUNNING))

    with_bug = run("-p", "bugpatch", "fixtures", "--hermes-transport=local", "--hermes-leak-check=off")

    with_bug.assert_outcomes(failed=1)
    assert "end: expected 0 kernels with a live process, got 1" in output_of(with_bug), output_of(with_bug)
    run("fixtures", "--hermes-transport=local").assert_outcomes(passed=1)


def test_processes_counts_a_live_kernel_the_registry_still_holds(pytester, run):
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "two.toml").write_text(
        '[scenario]\nname = "two"\n\n[[cell]]\ncode = "1"\nowner = "a"\n\n[[cell]]\ncode = "2"\nowner = "b"\n\n'
        '[[cell]]\naction = "shutdown_owner"\nowner = "a"\n\n[expect_end]\nkernels = 1\nprocesses = 1\n')

    run("fixtures", "--hermes-transport=local").assert_outcomes(passed=1)
