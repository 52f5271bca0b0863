"""``examples/test_shared_kernel.py`` works as README's "One kernel for several tests" says: its
tests share one kernel in one process and with ``--dist loadfile``, and skip, saying why, under
xdist's default ``load`` distribution (which would spread them over workers with a kernel each)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/test_shared_kernel.py"


def _run(*args: str, addopts: str = "") -> subprocess.CompletedProcess[str]:
    """pytest on the example as a user starts it: from the repo root, in an environment without
    this run's xdist worker or hermes settings (``addopts``: the user's ``PYTEST_ADDOPTS``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_HERMES", "PYTEST_ADDOPTS"))}
    env.update({"PYTEST_ADDOPTS": addopts} if addopts else {})
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *UNRELATED_PLUGINS,
                           "--hermes-leak-check=error", "-rs", EXAMPLE, *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)


@pytest.mark.parametrize("how", [("-p", "no:xdist"), ("-n", "2", "--dist", "loadfile")], ids=["one-process", "loadfile"])
def test_the_shared_kernel_example_passes_in_one_worker(how: tuple[str, ...]) -> None:
    done = _run(*how)
    assert done.returncode == 0 and "5 passed" in done.stdout, done.stdout[-3000:]


def test_the_shared_kernel_example_skips_saying_why_where_xdist_would_spread_it() -> None:
    done = _run("-n", "2")
    assert done.returncode == 0 and "5 skipped" in done.stdout, done.stdout[-3000:]
    assert "these tests share one kernel: run them in one process or with --dist loadfile" in done.stdout


def test_the_shared_kernel_example_runs_with_loadfile_given_in_addopts() -> None:
    """Found by a fresh-user helper (2026-12-05): with ``--dist loadfile`` in ``addopts`` (or
    ``PYTEST_ADDOPTS``) rather than on the command line, the example read only the controller's
    argv and skipped all 5 tests, "run them ... with --dist loadfile", which the user had done."""
    done = _run("-n", "2", addopts="--dist loadfile")
    assert done.returncode == 0 and "5 passed" in done.stdout, done.stdout[-3000:]


def test_the_readmes_count_of_the_examples_suite_is_what_pytest_collects() -> None:
    """README says what ``python -m pytest examples -q`` ends with; a new user ran it on 2026-12-05
    and got ``110 passed, 11 skipped`` against the README's ``109 passed, 10 skipped`` (the contract
    suite in ``examples/backend`` had grown by a case and a skip). The sum must be what is collected,
    and the skips the contract walkthrough's own (``examples/backend`` is that walkthrough)."""
    import re

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    said = re.search(r"`python -m pytest examples -q`[^)]*?: (\d+) passed, (\d+) skipped", readme)
    assert said, "README no longer says what `python -m pytest examples -q` ends with"
    backend = re.search(r"<!-- walkthrough backend: output -->\n```text\n.*?(\d+) passed, (\d+) skipped", readme, re.S)
    assert backend, "README's contract walkthrough shows no count"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *UNRELATED_PLUGINS,
                           "--collect-only", "-q", "examples"], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)
    collected = re.search(r"(\d+) tests? collected", done.stdout)
    assert done.returncode == 0 and collected, done.stdout[-3000:]
    passed, skipped = int(said.group(1)), int(said.group(2))
    assert passed + skipped == int(collected.group(1)), (said.group(0), collected.group(0))
    assert skipped == int(backend.group(2)), (said.group(0), backend.group(0)[-60:])
