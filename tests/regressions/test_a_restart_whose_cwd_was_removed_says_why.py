"""Seen (left alone by the twelfth session, fixed 2026-12-06): a kernel whose ``cwd=`` a cell removed
took ``restart()`` without a word, and every later cell was ``died`` with "the kernel exited with
code 70": the new worker could not enter the dir, and its traceback, written while no cell ran,
was dropped (at most "310 bytes of stderr written while no cell ran ... were dropped").

Fixed: the worker says so in one line ("hermes-kernel runner: cannot enter the working directory
cwd=...: No such file or directory"); the runner keeps its own last line from output no cell
took and hands it with the death, so the next cell's result names the dir and why (in its kernel
note, or in its stderr when the cell had begun as the worker died).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.transports import Transport


@pytest.mark.hermes_transports("local", "docker", "ssh", "filecell")
def test_the_cell_after_a_restart_into_a_removed_cwd_names_the_dir(hermes_transport: Transport,
                                                                   start: Callable[..., KernelHandle]) -> None:
    work = f"/tmp/hermes-removed-cwd-{uuid.uuid4().hex[:10]}"
    maker = start(hermes_transport)
    assert maker.execute(f"import os\nos.makedirs({work!r})").status == "ok"
    kernel: Any = start(hermes_transport, cwd=work)
    assert kernel.execute("x = 1").status == "ok"
    assert kernel.execute(f"import os, shutil\nos.chdir('/')\nshutil.rmtree({work!r})").status == "ok"
    kernel.restart()
    result = kernel.execute("1")
    assert result.status == "died", result.summary()
    said = f"cannot enter the working directory cwd={work!r}: No such file or directory"
    assert said in result.kernel.note or said in result.stderr, (result.summary(), result.stderr)
