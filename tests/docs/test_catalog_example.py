"""docs/catalog.md as a newcomer reads it: its example scenario runs as written from a
``fixtures/`` directory (it paired a SIGKILL after cell 1 with a cell 1 that had already ended the
kernel, and failed)."""

from __future__ import annotations

import re

import pytest

from tests.support import REPO_ROOT, RUN_TIMEOUT_S, UNRELATED_PLUGINS

CATALOG = REPO_ROOT / "docs" / "catalog.md"
EXAMPLE = re.compile(r"<!-- catalog example: (\S+) -->\n```toml\n(.*?)```", re.S)


def _example() -> tuple[str, str]:
    """``(path, text)`` of the catalog page's example scenario."""
    found = EXAMPLE.findall(CATALOG.read_text(encoding="utf-8"))
    assert len(found) == 1, "docs/catalog.md has no <!-- catalog example: fixtures/NAME.toml --> block"
    return found[0]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--hermes-transport=local",
                                         "--hermes-leak-check=error", *args, timeout=RUN_TIMEOUT_S)


def test_the_example_scenario_passes_as_written(pytester: pytest.Pytester) -> None:
    path, text = _example()
    assert path.startswith("fixtures/"), path
    (pytester.path / "fixtures").mkdir()
    (pytester.path / path).write_text(text, encoding="utf-8")

    result = _run(pytester, "fixtures", "-v")

    result.assert_outcomes(passed=1)
    name = re.search(r'^name = "(.*)"', text, re.M)
    assert name, text
    result.stdout.fnmatch_lines([f"*{path}::{name.group(1)}[[]local[]] PASSED*"])
