"""Seen by a user-journey helper (2026-12-07): a filecell start whose interpreter died at startup
(a ``sitecustomize`` on its path that exits) or was not there at all failed with
``the filecell kernel runner did not start (exit 1, client None):`` followed by the launch's raw
output, the transport's own protocol lines in it (``HERMES-FILECELL-PYTHON /usr/bin/python3``,
``HERMES-FILECELL-ERROR runner: exit 1``; a runner that died at its hello added
``@@hermes-client begin@@`` ...). The first line now says in plain words which step failed; the
interpreter's own words follow without the markers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelStartError
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.kernel.options import KernelOptions
from pytest_hermes_kernel.transports import make_transport
from tests.support import interpreter_with

_MARKERS = ("HERMES-FILECELL", "@@hermes-client", "client None")


def _start_error(python: str) -> str:
    transport = make_transport("filecell")
    try:
        with pytest.raises(KernelStartError) as info:
            KernelHandle(transport, KernelOptions(python=python, start_timeout=60)).start()
    finally:
        transport.close()
    return str(info.value)


def test_an_interpreter_that_exits_at_startup_is_said_to_have_ended_the_runner(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.stderr.write('boom\\n')\nsys.exit(3)\n")
    python = interpreter_with(tmp_path, {"PYTHONPATH": str(site)})
    text = _start_error(python)
    first = text.splitlines()[0]
    assert f"the kernel runner ({python!r}) ended before it said it was ready (exit status 1)" in first, text
    assert "boom" in text, text  # the interpreter's own words follow
    assert not [m for m in _MARKERS if m in text], text


def test_an_interpreter_that_is_not_there_is_said_to_be_missing(tmp_path: Path) -> None:
    python = str(tmp_path / "no-such-python3")
    text = _start_error(python)
    assert text.splitlines()[0] == (f"the filecell kernel runner did not start: the interpreter {python!r} was not "
                                    "found on the backend (exit status 127)"), text
    assert f"pass python= the path of an interpreter there ({python!r} is not one)" in text, text
    assert not [m for m in _MARKERS if m in text], text
