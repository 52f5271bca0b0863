"""The README's table of what a CI job's exit status and log say (`<!-- ci-exit-statuses -->`),
each row run as a user's CI job would run it, in a fresh directory: the exit status is the row's,
and every quoted piece of its last column is in the output (`N` a number, `...` any text)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.readme import fresh_env, readme_text, run_command

KERNEL_TEST = ("def test_x(hermes_kernel):\n    hermes_kernel.execute('1')\n\n\n"
               "def test_y(hermes_kernel):\n    hermes_kernel.execute('2')\n")
LEAKY_TEST = ("def test_x(hermes_kernel):\n    hermes_kernel.execute(\"import subprocess; "
              "subprocess.Popen(['sleep', '300'], start_new_session=True)\")\n")
DYING_TEST = ("def test_x(hermes_kernel):\n    hermes_kernel.execute('x = 1')\n"
              "    hermes_kernel.execute('import os; os._exit(3)')\n    assert hermes_kernel.execute('x').value == '1'\n")
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/hermes-no-engine.sock"}

#: row's first words -> (its exit status cell, [(test file, pytest arguments, environment, exit status)])
ROWS = {
    "a leg cannot run here": ("0", [(KERNEL_TEST, "--hermes-transport=docker", NO_ENGINE, 0)]),
    "the same with": ("1", [(KERNEL_TEST, "--hermes-transport=docker --hermes-require-transports", NO_ENGINE, 1)]),
    "a test leaks, `--hermes-leak-check=warn`": ("0", [(LEAKY_TEST, "--hermes-leak-grace=0.2", {}, 0)]),
    "a test leaks, `--hermes-leak-check=error`": ("1", [(LEAKY_TEST, "--hermes-leak-grace=0.2 --hermes-leak-check=error",
                                                         {}, 1)]),
    "a bad value": ("4 (a usage error)", [(KERNEL_TEST, "--hermes-leak-check=eror", {}, 4),
                                          (KERNEL_TEST, "", {"PYTEST_HERMES_TIMEOUT": "soon"}, 4)]),
    "a misspelled transport": ("4; under `-n 2` 1 (each test errors with the message)",
                               [(KERNEL_TEST, "--hermes-transport=dockr", {}, 4),
                                (KERNEL_TEST, "--hermes-transport=dockr -n 2", {}, 1)]),
    "a kernel dies": ("1", [(DYING_TEST, "", {}, 1)]),
}


def table_rows() -> list[list[str]]:
    text = readme_text()
    start = text.index("<!-- ci-exit-statuses -->")
    lines = text[start:].splitlines()[3:]  # the marker, the head, the rule
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def row(key: str) -> list[str]:
    found = [r for r in table_rows() if r[0].startswith(key)]
    assert len(found) == 1, f"README's CI table has {len(found)} rows starting {key!r}"
    return found[0]


def test_every_row_of_the_table_is_run_here() -> None:
    assert [r[0] for r in table_rows() if not any(r[0].startswith(k) for k in ROWS)] == []
    assert len(table_rows()) == len(ROWS)


def _pattern(quoted: str) -> re.Pattern[str]:
    text = re.escape(quoted).replace(re.escape("..."), ".*").replace(r"\ N\ ", r"\ \d+\ ")
    return re.compile(text)


@pytest.mark.parametrize("key", list(ROWS))
def test_a_row_s_exit_status_and_log(key: str, tmp_path: Path) -> None:
    cell, runs = ROWS[key]
    situation, status, says = row(key)
    assert status == cell, f"README row {situation!r} says exit status {status!r}"
    for n, (source, args, env, code) in enumerate(runs):
        directory = tmp_path / f"run{n}"
        directory.mkdir()
        (directory / "test_x.py").write_text(source, encoding="utf-8")
        ran = run_command(f"python -m pytest -p no:cacheprovider {args}", directory, env=fresh_env(**env))
        assert ran.returncode == code, ran.stdout[-3000:]
        if code != 1 or "-n 2" not in args:  # (under -n the usage error's text is each test's error, cut)
            for quoted in re.findall(r"`([^`]+)`", says):
                assert _pattern(quoted).search(ran.stdout), f"{quoted!r} not in:\n{ran.stdout[-3000:]}"


def test_doctor_of_one_leg_fails_a_ci_step_only_for_that_leg(tmp_path: Path) -> None:
    """The README's `hermes-kernel doctor docker` line: exit status 1 when that leg cannot run, and a
    `local` job's doctor is not failed by a docker it does not use (plain `doctor` exits 1 there)."""
    line = re.search(r"^hermes-kernel doctor docker +# only these transports; exit status 1 when one cannot run",
                     readme_text(), re.M)
    assert line, "README's command list has no `hermes-kernel doctor docker` line"
    env = fresh_env(**NO_ENGINE)
    docker = run_command("hermes-kernel doctor docker", tmp_path, env)
    assert docker.returncode == 1 and "docker    NO  " in docker.stdout, docker.stdout
    local = run_command("hermes-kernel doctor local", tmp_path, env)
    assert local.returncode == 0 and "docker" not in local.stdout, local.stdout
    assert run_command("hermes-kernel doctor", tmp_path, env).returncode == 1


def test_a_ci_runner_s_variables_change_nothing(tmp_path: Path) -> None:
    """The README: 'The kit reads no `CI` or `GITHUB_ACTIONS` variable': on a runner that sets them,
    a leg that cannot run still skips (exit status 0) unless the job says --hermes-require-transports."""
    assert "The kit reads no `CI` or `GITHUB_ACTIONS` variable" in readme_text()
    (tmp_path / "test_x.py").write_text(KERNEL_TEST, encoding="utf-8")
    ran = run_command("python -m pytest -p no:cacheprovider --hermes-transport=docker", tmp_path,
                      env=fresh_env(CI="true", GITHUB_ACTIONS="true", **NO_ENGINE))
    assert ran.returncode == 0 and "2 skipped" in ran.stdout, ran.stdout[-3000:]
    assert "the docker leg did not run here: 2 tests skipped" in ran.stdout, ran.stdout[-3000:]
