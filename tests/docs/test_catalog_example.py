"""docs/catalog.md as a newcomer reads it: its example scenario runs as written from a
``fixtures/`` directory (it paired a SIGKILL after cell 1 with a cell 1 that had already ended the
kernel, and failed), and its rule for which ``.toml`` files are scenarios is the plugin's."""

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


def test_which_toml_files_are_scenarios(pytester: pytest.Pytester) -> None:
    """The page's rule: under a ``fixtures`` directory at any depth, or named ``scenario_*.toml``
    anywhere; a file there without ``[scenario]`` is left alone; anything else is not collected."""
    scenario = '[scenario]\nname = "one"\nsource = "x"\n\n[[cell]]\ncode = "1"\nexpect = { value = "1" }\n'
    for path in ("tests/fixtures/deep/a.toml", "elsewhere/scenario_b.toml", "other/mine.toml"):
        (pytester.path / path).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / path).write_text(scenario, encoding="utf-8")
    (pytester.path / "tests/fixtures/data.toml").write_text("[settings]\nx = 1\n", encoding="utf-8")

    collected = _run(pytester, "--collect-only", "-q")
    named = _run(pytester, "other/mine.toml")

    collected.stdout.fnmatch_lines(["elsewhere/scenario_b.toml::one[[]local[]]",
                                    "tests/fixtures/deep/a.toml::one[[]local[]]", "2 tests collected*"])
    assert "mine.toml" not in collected.stdout.str() and "data.toml" not in collected.stdout.str()
    assert named.ret != 0
    named.stdout.fnmatch_lines(["*mine.toml is not collected as a scenario: *Hint: rename it scenario_mine.toml*"])
