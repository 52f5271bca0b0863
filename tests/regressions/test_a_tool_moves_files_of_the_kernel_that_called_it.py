"""A tool that uploaded to (or downloaded from) the kernel whose cell called it hung for ever.

``upload``/``download`` start the kernel first (``start()``), and ``start()`` waited for the
kernel's cell queue, which the running cell held while it waited for the tool: the tool waited
for the cell and the cell for the tool (its budget paused while a tool runs), so ``execute()``
never returned. A tool handing the cell a file, or taking one it wrote, is the plain way to move
files an agent's tool fetched or made. ``start()`` of a started kernel now returns at once, as it
says, without waiting for the queue, and the transfer runs beside the cell.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()`` in a thread of its own (as a tool's executor would run it), or ``TimeoutError``
    after ``seconds``: a hang fails the test instead of holding it (the cell's budget is paused)."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    if not out:
        raise TimeoutError(f"still waiting after {seconds} s")
    return out[0]


def test_a_tool_uploads_and_downloads_files_of_the_kernel_whose_cell_called_it(hermes_kernel_factory, tmp_path):
    source = tmp_path / "fetched.txt"
    source.write_text("from the host")
    handle: list = []

    def fetch() -> str:
        _within(10, lambda: handle[0].upload(source, "fetched.txt"))
        return "fetched.txt"

    def publish(name: str) -> int:
        return _within(10, lambda: handle[0].download(name, tmp_path / "published.txt")).files

    kernel = hermes_kernel_factory(tools={"fetch": fetch, "publish": publish})
    handle.append(kernel)

    got = kernel.execute("import hermes_tools\nopen(hermes_tools.fetch()).read()", timeout=30)
    put = kernel.execute("open('made.txt', 'w').write('by the cell')\nhermes_tools.publish(name='made.txt')", timeout=30)

    assert got.value == "'from the host'", got.summary()
    assert put.value == "1", put.summary()
    assert Path(tmp_path / "published.txt").read_text() == "by the cell"
