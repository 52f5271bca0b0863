"""Found by the breaker helper on other interpreters (2026-12-06): a kernel ``python=`` without
``json``'s C module ``_json`` (PyPy; a CPython built without it) never started. The frame codec
imported ``_json``'s parts by name, so every start ended in ``KernelStartError: the local kernel
runner died during start (exit code 1), before its hello`` over ``ModuleNotFoundError: import of
_json halted`` (filecell: "the filecell kernel runner did not start", blaming the backend's
tools). The codec now falls back to ``json``'s Python encoder and scanner, which write the same
text; a header as deep as a frame may hold (2 Python frames a level there) still arrives.

The interpreter is a venv of this one whose ``.pth`` file blocks ``_json`` (a ``.pth`` runs under
the runner's ``-I`` too), on the local kernel-server and spawn paths and filecell.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.kernel.runner.frames import MAX_FRAME_DEPTH
from tests.support import transports_closed_after  # noqa: F401 - the transport_of fixture

NEST = "def nest(n):\n    v = []\n    for _ in range(n - 1):\n        v = [v]\n    return v\n"


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.fixture(scope="module")
def python_without_json_c(tmp_path_factory: pytest.TempPathFactory) -> str:
    venv = tmp_path_factory.mktemp("no-json-c") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                          text=True, check=True, timeout=60).stdout.strip()
    Path(site, "no_json_c.pth").write_text("import sys; sys.modules['_json'] = None\n", encoding="utf-8")
    probe = "import json.decoder; print(json.decoder.c_scanstring)"
    assert subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True, check=True,
                          timeout=60).stdout == "None\n"
    return python


KINDS = [pytest.param("local", {}, id="local-server"), pytest.param("local", {"server": False}, id="local-spawn"),
         pytest.param("filecell", {}, id="filecell")]


@pytest.mark.parametrize("name, options", KINDS)
def test_a_kernel_whose_python_lacks_json_c_runs_cells_and_tools(
        transport_of: Callable[..., Transport], python_without_json_c: str, name: str, options: dict) -> None:
    options = {k: v() if isinstance(v, type) else v for k, v in options.items()}
    seen: list[object] = []
    kernel = start_kernel(transport_of(name, python=python_without_json_c, **options), start_timeout=30,
                          tools={"deep": _nested, "echo": lambda v: seen.append(v) or "got it"})
    try:
        first = kernel.execute("import sys; print('é ✓'); sys.modules['_json'], {'a': [1.5, None, True]}")
        assert (first.status, first.value, first.stdout) == ("ok", "(None, {'a': [1.5, None, True]})", "é ✓\n"), first
        as_deep = kernel.execute(NEST + f"import hermes_tools\nhermes_tools.deep(depth={MAX_FRAME_DEPTH}) == "
                                 f"nest({MAX_FRAME_DEPTH})", timeout=30)
        assert as_deep.value == "True", as_deep.summary()
        sent = kernel.execute(NEST + f"import hermes_tools\nhermes_tools.echo(v=nest({MAX_FRAME_DEPTH - 1}))", timeout=30)
        assert (sent.value, seen) == ("'got it'", [_nested(MAX_FRAME_DEPTH - 1)]), sent.summary()
        too_deep = kernel.execute("import hermes_tools\nhermes_tools.deep(depth=980)", timeout=30)
        assert (too_deep.status, too_deep.ename) == ("error", "ToolError"), too_deep.summary()
        assert f"over the {MAX_FRAME_DEPTH} a frame may hold" in too_deep.evalue, too_deep.evalue
        assert kernel.execute("1 + 1").value == "2"
    finally:
        kernel.shutdown()
