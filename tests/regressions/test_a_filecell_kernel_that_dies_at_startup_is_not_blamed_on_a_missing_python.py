"""Seen reproducing handed-2 B32 on the filecell leg (a kernel that dies during startup, 2026-12-07):
an interpreter whose ``sitecustomize`` writes ``boom`` and exits failed the start at once, with
its traceback, but the hint said ``the backend needs sh, python3 ('.../python-dies') and a
writable '/tmp/hermes-filecell-0'``: the interpreter was there and had run. The hint now says it
started and failed, and points at the output above.
"""

from __future__ import annotations

from pathlib import Path

from tests.regressions.test_a_failed_filecell_start_says_what_happened_without_protocol_markers import _start_error
from tests.support import interpreter_with


def test_the_hint_says_the_interpreter_started_and_failed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.stderr.write('boom\\n')\nsys.exit(3)\n")
    python = interpreter_with(tmp_path, {"PYTHONPATH": str(site)})
    text = _start_error(python)
    assert "boom" in text, text
    assert f"the interpreter {python!r} started and failed before the kernel runner said hello" in text, text
    assert "the backend needs" not in text, text
