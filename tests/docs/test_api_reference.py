"""docs/api.md against the code: every ``KernelOptions`` and ``WatchdogPolicy`` field with its type
and default, ``max_output_bytes``'s range, and every public member of ``KernelHandle``, so the
page cannot go stale (a newcomer found ``max_output_bytes``'s range only from an error)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from pytest_hermes_kernel.kernel import options
from pytest_hermes_kernel.kernel.handle import KernelHandle
from tests.support import REPO_ROOT

API = REPO_ROOT / "docs" / "api.md"


def _rows(title: str) -> dict[str, list[str]]:
    """The table under ``## title``: ``{name: [cells after the first]}`` keyed by the first cell's
    leading code span (``execute(code, ...)`` -> ``execute``); ``\\|`` in a cell is a ``|``."""
    text = API.read_text(encoding="utf-8")
    assert f"\n## {title}\n" in text, f"docs/api.md has no section {title!r}"
    part = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in part.splitlines():
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        m = re.match(r"`(\w+)", cells[0]) if cells else None
        if m:
            rows[m.group(1)] = cells[1:]
    return rows


def _shown_default(field: dataclasses.Field) -> str:
    value = field.default if field.default is not dataclasses.MISSING else field.default_factory()  # type: ignore[misc]
    if dataclasses.is_dataclass(value) and value == type(value)():
        return f"`{type(value).__name__}()`"
    return f"`{value!r}`"


@pytest.mark.parametrize("cls", [options.KernelOptions, options.WatchdogPolicy], ids=lambda c: c.__name__)
def test_every_field_is_listed_with_its_type_and_default(cls: type) -> None:
    rows = _rows(cls.__name__)
    fields = dataclasses.fields(cls)
    assert [f.name for f in fields if f.name not in rows] == [], f"docs/api.md's {cls.__name__} table lacks them"
    assert [name for name in rows if name not in {f.name for f in fields}] == [], "fields the code does not have"
    for f in fields:
        type_cell, default_cell = rows[f.name][0], rows[f.name][1]
        assert type_cell == f"`{f.type}`", f"{cls.__name__}.{f.name}: the page says {type_cell}, the code `{f.type}`"
        assert default_cell.startswith(_shown_default(f)), (
            f"{cls.__name__}.{f.name}: the page's default is {default_cell}, the code's {_shown_default(f)}")
        assert all(rows[f.name][2:4]), f"{cls.__name__}.{f.name}: the allowed values or what it does are empty"


def test_max_output_bytes_shows_the_range_the_code_enforces() -> None:
    allowed = _rows("KernelOptions")["max_output_bytes"][2]
    assert f"1024..{options.MAX_OUTPUT_CAP_BYTES}" in allowed, allowed
    with pytest.raises(options.ConfigError, match=rf"1024\.\.{options.MAX_OUTPUT_CAP_BYTES}"):
        options.KernelOptions(max_output_bytes=1023)


def test_every_public_member_of_the_handle_is_listed() -> None:
    public = {name for name in vars(KernelHandle) if not name.startswith("_")}
    rows = _rows("KernelHandle")
    assert sorted(public - set(rows)) == [], "docs/api.md's KernelHandle table lacks them"
    assert sorted(set(rows) - public) == [], "the KernelHandle table lists members the class does not have"
    assert all(cells and cells[0] for cells in rows.values())


def test_the_readme_links_the_page() -> None:
    assert "](docs/api.md)" in (REPO_ROOT / "README.md").read_text(encoding="utf-8")
