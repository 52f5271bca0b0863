"""``pytest --help``'s hermes options: a new user read ``[env PYTEST_HERMES_IMAGE, ini hermes_image;
default see help]`` in the help itself (five options said ``default see help``), and ``see README
'Images'``, ``'Several engines'``, ``'Several hosts'``, which README has no heading for (its
sections are "Several docker engines", "Several ssh hosts"; "Images" is in docs/reference.md).
Now an option without a default value says its default in its own words, and every page and
section the help points at exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support import REPO_ROOT, UNRELATED_PLUGINS


def headings(page: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("#")]


def test_the_help_says_no_default_see_help_and_its_sections_exist(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--help"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    text = " ".join(done.stdout.split())  # argparse wraps lines
    hermes = text[text.index("--hermes-transport"):]
    assert "see help" not in hermes, hermes[max(0, hermes.find("see help") - 300):][:400]
    pointers = re.findall(r"see (README|docs/[\w.]+) '([^']+)'", hermes)
    assert len(pointers) >= 6, pointers
    for page, section in pointers:
        titles = headings(REPO_ROOT / ("README.md" if page == "README" else page))
        assert any(t.startswith(section) for t in titles), f"{page} has no section {section!r}"
