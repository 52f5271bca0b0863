"""Unit: which interpreter runs a transport's helper scripts (``transports/script_pythons.py``)."""

from __future__ import annotations

import os
import subprocess

from pytest_hermes_kernel.transports.script_pythons import (CLEAR_WITHOUT_PYTHON_SH, ScriptPythons, program_missing,
                                                            python_anywhere)

MISSING = (126, b'OCI runtime exec failed: exec failed: unable to start container process: exec: "python3": '
                b'executable file not found in $PATH: unknown\r\n', b"")


def test_the_transports_python_first_then_the_kernels_own_and_then_the_one_that_ran() -> None:
    pythons = ScriptPythons("python3")
    pythons.add("c1", "/opt/a/python")
    pythons.add("c1", "/opt/b/python")
    pythons.add("c1", "python3")  # the default is no extra candidate
    tried: list[str] = []

    def run(interpreter: str) -> tuple[int | None, bytes, bytes]:
        tried.append(interpreter)
        return (0, b"ok", b"") if interpreter == "/opt/b/python" else MISSING

    assert pythons.run("c1", None, run) == (0, b"ok", b"")
    assert tried == ["python3", "/opt/a/python", "/opt/b/python"]
    assert pythons.candidates("c1") == ["/opt/b/python", "python3", "/opt/a/python"]  # what ran goes first
    assert pythons.candidates("c2") == ["python3"] and pythons.candidates("c2", "/k/python") == ["/k/python", "python3"]


def test_a_scripts_own_failure_is_not_a_missing_interpreter() -> None:
    assert program_missing(*MISSING)
    assert program_missing(127, b"", b"sh: 1: python3: not found\n")
    assert not program_missing(1, b"not found", b"")  # the script's own exit status
    assert not program_missing(0, b"", b"")
    calls: list[str] = []
    assert ScriptPythons("python3").run("c", None, lambda p: calls.append(p) or (1, b"", b"")) == (1, b"", b"")
    assert calls == ["python3"]


def test_python_anywhere_runs_python3_or_does_without(tmp_path) -> None:
    argv = python_anywhere("import sys; print('py', sys.argv[1:])", ["a", "b c"], 'echo "none $1 $2"')
    assert subprocess.run(argv, capture_output=True, text=True, check=True).stdout == "py ['a', 'b c']\n"

    bare = tmp_path / "bin"  # a PATH with the shell's tools but no python3
    bare.mkdir()
    for tool in ("tr", "head", "rm", "printf"):
        os.symlink(subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
                   or f"/usr/bin/{tool}", bare / tool)
    root = tmp_path / "root"
    (root / "kernel").mkdir(parents=True)
    (root / ".hidden").write_text("")
    env = {"PATH": str(bare), "HOME": str(tmp_path)}
    script = "import sys; sys.exit(3)"  # (a python found by a runner's command line here would exit 3)
    argv = python_anywhere(script, ["~/root"], CLEAR_WITHOUT_PYTHON_SH)
    done = subprocess.run(["/bin/sh", *argv[1:]], env=env, capture_output=True, text=True)
    assert (done.returncode, done.stdout) in ((0, "gone\n"), (3, "")), done  # (3: a kernel runner of this machine's)
    if done.returncode == 0:
        assert list(root.iterdir()) == []
