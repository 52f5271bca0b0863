"""Reading the README as the doc tests do: its walkthrough blocks, and running them in a fresh
directory the way a newcomer would (the package installed, nothing of this repo around).

A walkthrough block is a fenced block right after ``<!-- walkthrough NAME: PART -->``. PART is a
file name (written into the fresh directory), ``command`` (run there with ``bash -e``),
``output`` (what the README says the command prints: each line but ``...`` must match a line
of the real output, numbers, hex ids and rule lines of any width aside), or another word
(``fix``, ``github-actions``) that its test reads itself.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support import REPO_ROOT

README = REPO_ROOT / "README.md"
BLOCK = re.compile(r"<!-- walkthrough (\S+): (\S+) -->\n```[\w-]*\n(.*?)```", re.S)
WALKTHROUGH_TIMEOUT_S = 300.0


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def walkthrough(name: str) -> dict[str, str]:
    """The blocks of walkthrough ``name``: ``{part: text}``.

    :raises AssertionError: if the README has no block of that walkthrough.
    """
    parts = {part: text for wt, part, text in BLOCK.findall(readme_text()) if wt == name}
    assert parts, f"README has no walkthrough {name!r} (<!-- walkthrough {name}: PART --> blocks)"
    return parts


def fresh_env(**overrides: str) -> dict[str, str]:
    """This environment as a newcomer's shell has it: this venv's ``python`` first on ``PATH``,
    no ``PYTEST_*`` setting of the outer run (its run id, xdist worker, addopts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "80"
    env.update(overrides)
    return env


def write_files(parts: dict[str, str], directory: Path) -> None:
    """Write the file parts (names with a dot) of a walkthrough into ``directory``."""
    for part, text in parts.items():
        if "." in part:
            (directory / part).write_text(text, encoding="utf-8")


def run_command(command: str, directory: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a README command line in ``directory``, stdout and stderr together."""
    return subprocess.run(["bash", "-ec", command], cwd=directory, env=env or fresh_env(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=WALKTHROUGH_TIMEOUT_S)


def line_pattern(line: str) -> re.Pattern[str]:
    """A README output line as a pattern: digits, hex ids and ``=``/``_``/``-`` rules may differ."""
    tokens = {"hex": "[0-9a-f]+", "rule": "[=_-]+", "num": r"\d+", "space": r"\s+"}
    token = re.compile(r"(?P<hex>[0-9a-f]{12,})|(?P<rule>[=_-]{3,})|(?P<num>\d+)|(?P<space>\s+)|(?P<char>.)")
    pieces = [tokens.get(m.lastgroup or "", "") or re.escape(m.group()) for m in token.finditer(line.strip())]
    return re.compile("".join(pieces))


def missing_lines(shown: str, actual: str) -> list[str]:
    """The lines of ``shown`` (but ``...``) that no line of ``actual`` matches."""
    actual_lines = actual.splitlines()
    return [line for line in shown.splitlines() if line.strip() and line.strip() != "..."
            and not any(line_pattern(line).search(a) for a in actual_lines)]
