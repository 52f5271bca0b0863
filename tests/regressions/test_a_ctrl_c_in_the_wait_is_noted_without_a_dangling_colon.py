"""Seen reproducing handed-2 B28 (a Ctrl-C in the thread waiting in ``execute``, 2026-12-07): the
next cell's note and the failing test's story ended in a dangling colon, ``the cell's wait failed:
KeyboardInterrupt: `` and ``cell 2 (generation 0): raised KeyboardInterrupt: ``, where
docs/reference.md promises the note "the cell's wait failed: KeyboardInterrupt". An error without
a message is now named alone.
"""

from __future__ import annotations

import _thread
import signal
import threading

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.plugin.story import KernelStory
from tests.support import CellStarted


def test_the_note_and_the_story_name_the_keyboard_interrupt_alone() -> None:
    started = CellStarted()
    with start_kernel("local", tools=started.tools()) as kernel:
        story = KernelStory(kernel)
        kernel.add_listener(story.on_event)
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as under a terminal
        try:
            timer = threading.Thread(target=lambda: (started.wait(), _thread.interrupt_main()))
            with pytest.raises(KeyboardInterrupt):
                timer.start()
                kernel.execute(started.CODE + "while True: pass", timeout=60)
            timer.join()
        finally:
            signal.signal(signal.SIGINT, previous)

        result = kernel.execute("1 + 1")

        assert result.value == "2" and result.kernel.state_lost, result.summary()
        assert result.kernel.note == "the cell's wait failed: KeyboardInterrupt", result.kernel.note
        assert any(line.endswith("raised KeyboardInterrupt") for line in story.cells), list(story.cells)
