"""The lowest versions pyproject.toml declares are the ones a ``pip install`` may pick (an older
pin elsewhere in a user's environment, a lock file made by lowest resolution), so they must work.
A breaker session on 2026-12-05 installed every dependency at its declared minimum, on Python 3.11
and 3.10, and found three that did not (docs/testing.md, "Lowest versions", says how to run that
again). Each entry below is a floor that session measured; a later pyproject may raise a minimum,
never put one back under its floor."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

#: name -> (the lowest version that works, what the one before it did)
FLOORS = {
    "pytest": ((8, 0), "pytest 7.4's getini returns '' for an unset ini key registered with default=None "
                       "(pytest#11282, fixed in 8.0): every run ended 'ini hermes_transport is set but empty' "
                       "with no ini file at all"),
    "docker": ((7, 1), "docker 7.0 cannot reach an engine with requests 2.32 or newer (which it allows): "
                       "'Not supported URL scheme http+docker', and doctor said to start dockerd"),
    "paramiko": ((4, 0), "paramiko 3.4.0 warns CryptographyDeprecationWarning (TripleDES) at import, and 3.4.1 to "
                         "3.5.1 'DSA is deprecated' at each key file loaded (PKey.from_path), on the cryptography "
                         "pip picks for them (51): with filterwarnings = error every ssh test errored, then each "
                         "one given a key file"),
    "ipykernel": ((6, 11), "ipykernel 6.0.0 (yanked) started no kernel beside jupyter_client 8 (no ipython_genutils), "
                           "and 6.1 to 6.10 refuse jupyter_client 8: the bench extra's anchor was not measured"),
    "matplotlib": ((3, 7, 3), "matplotlib 3.7.0 to 3.7.2 allow numpy 2 and do not import with it (numpy.core.multiarray "
                              "failed to import): benchmarks/run.py wrote no chart; 3.7.3 caps numpy under 2"),
    "cosmic-ray": ((8, 4, 1), "cosmic-ray 8.4.0 was never released: a lowest-versions install (==8.4) found no "
                              "distribution; 8.4.1 runs benchmarks/mutation.py"),
}


def declared() -> list[str]:
    """Every requirement of pyproject.toml: the dependencies and each extra's."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]


def minimum(requirement: str) -> tuple[str, tuple[int, ...]]:
    match = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)\s*(;.*)?", requirement)
    assert match, f"{requirement!r} has no lower bound (>=): a lowest-versions run cannot pin it"
    return match.group(1).lower(), tuple(int(part) for part in match.group(2).split("."))


@pytest.mark.parametrize("requirement", declared())
def test_every_requirement_has_a_lower_bound(requirement: str) -> None:
    minimum(requirement)


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_no_declared_minimum_is_under_what_was_found_to_work(name: str) -> None:
    floor, why = FLOORS[name]
    found = [(req, low) for req, low in map(minimum, declared()) if req == name]
    assert found, f"{name} is no longer declared: drop it from FLOORS"
    for _, low in found:
        assert low >= floor, f"{name}>={'.'.join(map(str, low))} is declared, but {why}"


def test_the_plugins_pytest_check_is_pyprojects_minimum() -> None:
    from pytest_hermes_kernel.plugin.settings import MIN_PYTEST

    assert [low for name, low in map(minimum, declared()) if name == "pytest"] == [MIN_PYTEST]


def test_an_older_pytest_is_one_line_naming_the_upgrade(monkeypatch) -> None:
    """pip refuses pytest 7 for this package, but a later ``pip install pytest==7.4.0`` only warns:
    every run then ended ``ini hermes_transport is set but empty`` (no ini file at all)."""
    from pytest_hermes_kernel.plugin import settings

    monkeypatch.setattr(pytest, "__version__", "7.4.0")
    with pytest.raises(pytest.UsageError) as refused:
        settings.pytest_configure(None)  # type: ignore[arg-type]  # refused before the config is read
    assert str(refused.value) == ("pytest-hermes-kernel needs pytest 8.0 or newer, this is 7.4.0: "
                                  "pip install -U 'pytest>=8.0'")
