"""Seen reproducing "a child process left behind after shutdown" on the filecell leg (2026-12-07):
a cell's ``setsid`` helper outlived its kernel, and the leak report listed, beside it, a second
leak whose command line was the first lines of a ``python -c`` script, cut mid-word over four
report lines::

    leaked child process: pid 8459: /work/main/.venv/bin/python -S -c
  import sys
  if sys.path[:1] == ['']:  # the caller's working dir, where a project's own types.py shadowed the stdlib's
      del

It is the ``LocalShellBackend``'s subreaper, which stays until what it adopted has ended. The
report now says so, on one line, and names the process it holds.
"""

from __future__ import annotations

import pytest

SUITE = """
def test_leaves_a_helper(hermes_kernel):
    r = hermes_kernel.execute("import subprocess; subprocess.Popen(['sleep', '300'], start_new_session=True).pid")
    assert r.status == "ok", r.summary()
    open("helper.pid", "w").write(r.value)
"""


def test_the_leak_report_names_the_subreaper_and_what_it_holds(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hermes-transport=filecell",
                                           "--hermes-leak-check=error", timeout=120)

    result.assert_outcomes(passed=1, errors=1)
    helper = (pytester.path / "helper.pid").read_text()
    lines = result.stdout.lines
    report = result.stdout.str().partition("short test summary info")[0]  # (the summary repeats the error's
    leaks = [line.strip() for line in report.splitlines() if "leaked " in line]  # message whole under CI=true)
    assert any(f"pid {helper} " in line and "sleep 300" in line and "kernel process" in line for line in leaks), leaks
    subreaper = [line for line in leaks if "child process" in line]
    assert len(subreaper) == 1, leaks
    assert "the filecell LocalShellBackend's subreaper" in subreaper[0], subreaper
    assert f"which stays until what it adopted has ended: pid {helper} sleep 300" in subreaper[0], subreaper
    assert not any("sys.path[:1]" in line for line in lines), "the subreaper's script reached the report"
