"""A kernel's interpreter need not be the host's: every Python found on this machine runs one.

The host needs Python 3.10 or newer (``requires-python``); the kernel runner is stdlib-only and
runs on 3.8 or newer (README "Needs"): a local kernel (kernel server and spawn path) and a
filecell kernel on each such interpreter answer a cell with that interpreter's version, and a
local one is forked by its kernel server (no spawn fallback). An older interpreter is refused at
start with a ``KernelStartError`` that names the version it needs and the one it found, not a
``SyntaxError`` traceback from deep inside the runner.

The interpreters are pyenv's (``$PYENV_ROOT/versions/*/bin/python``, default ``~/.pyenv``) and
any ``python3.N`` on ``PATH``; each test skips, saying where it looked, when none of its kind is
found.

A docker or ssh kernel's interpreter (``python=``) is the container's or ssh host's: the kit's
image has only its own ``python3``, so an older one is played there by that ``python3`` under a
``sitecustomize`` that lowers ``sys.version_info`` (the refusal checks nothing else).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Callable

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.transports import get_transport
from tests.support import transports_closed_after  # noqa: F401 - the transport_of fixture

RUNNER_MIN = (3, 8)
PYENV_ROOT = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
WHERE = f"{PYENV_ROOT}/versions/*/bin/python and python3.N on PATH"


def _found() -> dict[str, tuple[int, ...]]:
    """Interpreter path -> its version, one path per version."""
    paths = sorted(glob.glob(os.path.join(PYENV_ROOT, "versions", "*", "bin", "python")))
    paths += [p for p in (shutil.which(f"python3.{minor}") for minor in range(6, 16)) if p]
    found: dict[str, tuple[int, ...]] = {}
    seen: set[str] = set()
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            out = subprocess.run([path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                                 capture_output=True, text=True, timeout=30, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        version = tuple(int(part) for part in out.strip().split("."))
        if version not in found.values():  # (a second path to one version: no new case, only time)
            found[path] = version
    return found


FOUND = _found()


def _params(supported: bool) -> list:
    chosen = [pytest.param(path, version, id=".".join(map(str, version)))
              for path, version in FOUND.items() if (version >= RUNNER_MIN) == supported]
    kind = f"Python {'>=' if supported else '<'} {'.'.join(map(str, RUNNER_MIN))}"
    return chosen or [pytest.param(None, None, id="none",
                                   marks=pytest.mark.skip(reason=f"no {kind} interpreter found ({WHERE})"))]


KINDS = [pytest.param("local", {}, id="local-server"), pytest.param("local", {"server": False}, id="local-spawn"),
         pytest.param("filecell", {}, id="filecell")]


@pytest.mark.parametrize("name, options", KINDS)
@pytest.mark.parametrize("python, version", _params(supported=True))
def test_a_kernel_runs_on_each_supported_python(transport_of: Callable[..., Transport], name: str,
                                                options: dict, python: str, version: tuple[int, ...]) -> None:
    kernel = start_kernel(transport_of(name, python=python, **options))
    try:
        first = kernel.execute("import sys; x = 41; '%d.%d.%d' % sys.version_info[:3]")
        assert (first.status, first.value) == ("ok", repr(".".join(map(str, version)))), first
        assert first.kernel.note == "", f"the kernel was not started the usual way: {first.kernel.note}"
        assert kernel.execute("x + 1").value == "42"
    finally:
        kernel.shutdown()


@pytest.mark.parametrize("name, options", KINDS)
@pytest.mark.parametrize("python, version", _params(supported=False))
def test_an_older_python_is_refused_naming_the_version(transport_of: Callable[..., Transport], name: str,
                                                       options: dict, python: str, version: tuple[int, ...]) -> None:
    if name == "filecell" and version < (3,):
        pytest.skip("Python 2 refuses the filecell setup's -I option itself (its error names the interpreter)")
    transport = transport_of(name, python=python, **options)
    with pytest.raises(KernelStartError) as raised:
        start_kernel(transport, start_timeout=20)
    text = str(raised.value)
    found = ".".join(map(str, version))
    assert "needs Python 3.8 or newer" in text and f"Python {found}" in text, text
    assert "SyntaxError" not in text and "Traceback" not in text, text
    assert "needs sh, python3" not in text, f"a hint blaming the backend's tools (filecell): {text}"


FAKE_37 = r"""
import os, tempfile
where = tempfile.mkdtemp(prefix='hermes-fake-python-')
with open(os.path.join(where, 'sitecustomize.py'), 'w') as fh:
    fh.write("import sys\nsys.version_info = (3, 7, 0, 'final', 0)\n")
with open(os.path.join(where, 'python'), 'w') as fh:
    fh.write('#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' % where)
os.chmod(os.path.join(where, 'python'), 0o755)
os.chmod(where, 0o755)
os.path.join(where, 'python')
"""


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_far_side_python_older_than_3_8_is_refused(docker_ready: None, start: Callable[..., object],
                                                     name: str) -> None:
    transport = get_transport(name)
    helper = start(transport)
    fake = helper.execute(FAKE_37).value.strip("'")
    try:
        with pytest.raises(KernelStartError) as raised:
            start_kernel(transport, python=fake, start_timeout=30)
        assert "the hermes kernel runner needs Python 3.8 or newer" in str(raised.value), raised.value
    finally:
        helper.execute(f"import shutil; shutil.rmtree({os.path.dirname(fake)!r})")


#: Contract cases whose cells lean on the kernel's Python version (a backend author's kernel may
#: run any supported one): the C stack overflow (3.12+ stop the 3.11 reproducer with their own C
#: recursion limit), and the forked child's exit status (``os.waitstatus_to_exitcode`` is 3.9+).
VERSIONED_CASES = ["crashes:test_stack_overflow_is_died_with_sigsegv_and_a_note",
                   "channel_integrity:test_fork_child_never_touches_the_channel"]


@pytest.mark.parametrize("case", VERSIONED_CASES, ids=[c.split(":")[1] for c in VERSIONED_CASES])
@pytest.mark.parametrize("python, version", _params(supported=True))
def test_the_contracts_version_dependent_cases_hold_on_each_supported_python(
        transport_of: Callable[..., Transport], python: str, version: tuple[int, ...], case: str) -> None:
    """The contract suite (``pytest_hermes_kernel.contract``) fails whatever the backend if one of
    its own cells does not run on the kernel's interpreter."""
    import importlib

    module, name = case.split(":")
    run_case = getattr(importlib.import_module(f"pytest_hermes_kernel.contract.{module}"), name)
    kernel = start_kernel(transport_of("local", python=python))
    try:
        run_case(kernel)
    finally:
        kernel.shutdown()


@pytest.mark.parametrize("python, version", _params(supported=True))
def test_tool_arguments_too_deep_are_refused_by_their_depth_on_each_supported_python(
        transport_of: Callable[..., Transport], python: str, version: tuple[int, ...]) -> None:
    """3.12's json encoder stops at its C recursion limit (~1000 levels) before the frame's own
    depth check: the cell's ``ToolError`` said "maximum recursion depth exceeded while encoding a
    JSON object", not the 500 levels a frame may hold."""
    calls: list[object] = []
    kernel = start_kernel(transport_of("local", python=python), tools={"echo": lambda v: calls.append(v)})
    try:
        result = kernel.execute("import hermes_tools, sys\nsys.setrecursionlimit(20000)\nv = []\n"
                                "for _ in range(2999):\n    v = [v]\nhermes_tools.echo(v=v)", timeout=10)
        assert (result.status, result.ename) == ("error", "ToolError"), result.summary()
        assert "over the 500 a frame may hold" in result.evalue, result.evalue
        assert calls == [] and kernel.execute("1 + 1").value == "2"
    finally:
        kernel.shutdown()
