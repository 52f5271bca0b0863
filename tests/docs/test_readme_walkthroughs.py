"""The README's walkthroughs and its "Outside pytest" script, run as written in a fresh directory.

Each test takes the blocks from README.md itself (see :mod:`tests.docs.readme`), so a
walkthrough that stops working, or whose shown output drifts from what it prints, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.readme import missing_lines, run_command, walkthrough, write_files
from tests.support import REPO_ROOT

#: A few contract cases that cover a whole kernel life on the backend (the full suite on this
#: backend is examples/backend/, which CI runs: the files are the README's, see below).
CONTRACT_SAMPLE = ("test_namespace_persists_across_cells or test_restart_loses_state_and_bumps_generation "
                   "or test_system_exit_ends_the_kernel_and_keeps_the_code or test_tool_call_returns_the_host_value")


def _passed(output: str) -> str:
    found = re.findall(r"^=*\s*(\d+ passed.*?)\s*=*$", output, re.M)
    return found[-1] if found else "(no result line)"


def test_walkthrough_1_files_are_the_example_backend_that_ci_runs() -> None:
    parts = walkthrough("backend")
    for name in ("conftest.py", "test_contract.py"):
        assert parts[name] == (REPO_ROOT / "examples" / "backend" / name).read_text(encoding="utf-8"), (
            f"README's walkthrough 1 {name} differs from examples/backend/{name}")


def test_walkthrough_1_collects_the_whole_contract_suite_and_runs_in_a_fresh_directory(tmp_path: Path) -> None:
    parts = walkthrough("backend")
    write_files(parts, tmp_path)
    shown = re.search(r"(\d+) passed, (\d+) skipped", parts["output"])
    assert shown, parts["output"]
    collected = run_command(f"{parts['command'].strip()} --collect-only", tmp_path)
    total = int(shown.group(1)) + int(shown.group(2))
    assert f"{total} tests collected" in collected.stdout, collected.stdout[-2000:]

    ran = run_command(f"{parts['command'].strip()} -k '{CONTRACT_SAMPLE}'", tmp_path)
    assert ran.returncode == 0 and _passed(ran.stdout).startswith("4 passed"), ran.stdout[-3000:]


def test_walkthrough_2_reproduces_the_leak_then_passes_once_fixed(tmp_path: Path) -> None:
    parts = walkthrough("leak")
    write_files(parts, tmp_path)
    failing = run_command(parts["command"], tmp_path)
    assert failing.returncode == 1, failing.stdout[-3000:]
    assert missing_lines(parts["output"], failing.stdout) == [], failing.stdout[-3000:]
    assert "ExitInfo(" not in failing.stdout and "RuntimeWarning" not in failing.stdout, failing.stdout[-3000:]

    (test_file,) = [name for name in parts if name.startswith("test_")]
    source = (tmp_path / test_file).read_text(encoding="utf-8")
    fix = parts["fix"].strip()
    fixed = re.sub(r"^START_HELPER = .*$", lambda _: fix, source, count=1, flags=re.M)
    assert fixed != source, "the fix block replaces no START_HELPER line"
    (tmp_path / test_file).write_text(fixed, encoding="utf-8")
    passing = run_command(parts["command"], tmp_path)
    assert passing.returncode == 0 and _passed(passing.stdout).startswith("1 passed"), passing.stdout[-3000:]


def test_walkthrough_3_runs_every_leg_of_the_matrix(docker_ready: None, tmp_path: Path) -> None:
    parts = walkthrough("matrix")
    write_files(parts, tmp_path)
    ran = run_command(parts["command"], tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert missing_lines(parts["output"], ran.stdout) == [], ran.stdout[-3000:]


def test_walkthrough_3_github_job_runs_the_same_legs_with_the_same_command(tmp_path: Path) -> None:
    parts = walkthrough("matrix")
    job = parts["github-actions"]
    matrix = re.search(r"transport: \[(.*?)\]", job)
    legs = re.search(r"--hermes-transport=(\S+)", parts["command"])
    assert matrix and legs and [t.strip() for t in matrix.group(1).split(",")] == legs.group(1).split(",")
    run_line = re.findall(r"^\s*(?:- )?run: (.*\$\{\{ matrix\.transport \}\}.*)$", job, re.M)
    assert len(run_line) == 1, job
    assert run_line[0].replace("${{ matrix.transport }}", legs.group(1)) == parts["command"].strip()

    write_files(parts, tmp_path)
    ran = run_command(run_line[0].replace("${{ matrix.transport }}", "local"), tmp_path)
    assert ran.returncode == 0 and _passed(ran.stdout).startswith("2 passed"), ran.stdout[-3000:]


def test_outside_pytest_script_runs_its_sync_and_async_parts(tmp_path: Path) -> None:
    parts = walkthrough("script")
    write_files(parts, tmp_path)
    ran = run_command(parts["command"], tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:]
    # the async part ran: on_cancelled printed the cancelled cell's result
    assert re.search(r"^CellResult\(status='timeout'.*watchdog='interrupted'", ran.stdout, re.M), ran.stdout
    assert "KernelSnapshot(key=KernelKey(owner='conv-a'" in ran.stdout, ran.stdout
    assert not re.search(r"^(Traceback|Exception ignored)", ran.stdout, re.M), ran.stdout  # nothing on stderr


def _runs_as_shown(name: str, directory: Path) -> None:
    """Walkthrough ``name``'s files written into ``directory``, its command run there: it exits 0
    and prints every line its output block shows."""
    parts = walkthrough(name)
    write_files(parts, directory)
    ran = run_command(parts["command"], directory)
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert missing_lines(parts["output"], ran.stdout) == [], ran.stdout[-3000:]


def test_files_example_uploads_and_downloads_in_a_fresh_directory(tmp_path: Path) -> None:
    _runs_as_shown("files", tmp_path)
    assert (tmp_path / "results" / "result.txt").read_text() == "A,B\n1,2\n"


def test_quickstart_runs_as_written_in_a_fresh_directory(tmp_path: Path) -> None:
    _runs_as_shown("quickstart", tmp_path)


@pytest.mark.parametrize("name", ["quickstart", "backend", "leak", "matrix", "script", "files"])
def test_every_walkthrough_has_a_command(name: str) -> None:
    assert "command" in walkthrough(name)
