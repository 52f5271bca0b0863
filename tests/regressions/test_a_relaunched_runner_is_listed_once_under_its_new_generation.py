"""A kernel whose runner was lost (killed from outside, or its wait cut by Ctrl-C) gets a new runner
at its next cell. A failing test's story listed that runner's pids twice, first under the lost
runner's generation (``generation 0: worker pid 30962, runner pid 30960`` beside the real
generation 0, then ``generation 1: worker pid 30962, runner pid 30960``): the ``started`` event
of the new runner came before the generation moved on. Found reproducing handed case B28
(a Ctrl-C in the thread waiting in ``execute``).
"""

from __future__ import annotations

import os
import signal

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.plugin.story import KernelStory
from tests.support import gone, wait_until


def _runner_pids(story: KernelStory) -> dict[int, list[int]]:
    """``runner pid -> generations`` the story's ``pids:`` lines list it under."""
    listed: dict[int, list[int]] = {}
    for line in story.generations:  # "generation N: worker pid W, runner pid R"
        generation = int(line.split(":")[0].split()[1])
        listed.setdefault(int(line.rsplit(" ", 1)[1]), []).append(generation)
    return listed


def test_a_relaunched_runner_is_listed_once_under_its_new_generation() -> None:
    with start_kernel("local") as kernel:
        story = KernelStory(kernel)
        kernel.add_listener(story.on_event)
        assert kernel.execute("x = 1").status == "ok"
        old_runner = kernel.runner_pid
        assert old_runner is not None
        os.kill(old_runner, signal.SIGKILL)
        wait_until(lambda: gone(old_runner), 10, what="the runner to die")
        assert kernel.execute("x").status == "died"  # the cell that finds the runner gone
        result = kernel.execute("x")  # runs on a new runner
        assert result.kernel.generation == 1 and result.ename == "NameError", result.summary()
        listed = _runner_pids(story)
        assert listed == {old_runner: [0], kernel.runner_pid: [1]}, "\n".join(story.generations)
