"""Every module of the repo compiles on every Python the package supports (3.10 and newer).

CPython 3.13 dedents docstrings in the compiler, through UTF-8: a docstring that holds a lone
surrogate (``\\udcff`` written with one backslash, in a docstring that is not raw) makes
``compile()`` raise ``UnicodeEncodeError`` there, so the module cannot be imported at all, while
3.10-3.12 compile it. ``kernel/runner/frames.py`` had one: on 3.13 the host could not import the
package (pytest could not load the plugin) and no kernel runner started under a 3.13
interpreter. This check runs on any interpreter, so a host of 3.11 catches what 3.13 refuses.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TREES = ("pytest_hermes_kernel", "tests", "examples", "fixtures", "benchmarks", "conftest.py")


def _python_files() -> list[Path]:
    files: list[Path] = []
    for name in TREES:
        path = REPO / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def _unencodable_docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_bytes(), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        doc = ast.get_docstring(node, clean=False)
        if doc is None:
            continue
        try:
            doc.encode("utf-8")
        except UnicodeEncodeError as exc:
            line = node.body[0].lineno
            found.append(f"{path.relative_to(REPO)}:{line}: docstring holds {exc.object[exc.start]!r}")
    return found


def test_no_docstring_holds_a_character_utf8_cannot_encode() -> None:
    files = _python_files()
    assert len(files) > 100, f"found only {len(files)} Python files under {REPO}"
    bad = [entry for path in files for entry in _unencodable_docstrings(path)]
    assert not bad, ("docstrings Python 3.13+ refuses to compile (write the escape as \\\\udcff, "
                     "or make the docstring raw):\n" + "\n".join(bad))
