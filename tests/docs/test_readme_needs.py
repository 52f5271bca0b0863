"""README's "Needs" and install text say what pyproject.toml declares: the Python and pytest a
host needs, the Python versions tested, the extras each leg takes, what ``dev`` brings and the
too-old example's floor. The floors were raised on 2026-12-05 (pytest>=8.0, docker>=7.1,
paramiko>=4.0) and a fresh-install helper checked the README against them by hand; this keeps the
two from drifting apart again."""

from __future__ import annotations

import re
import sys

from tests.docs.readme import readme_text
from tests.support import REPO_ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def _project() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _floors(requirements: list[str]) -> dict[str, str]:
    """``{name: lowest version}`` of ``requirements`` (``docker>=7.1`` -> ``{"docker": "7.1"}``)."""
    found = (re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)\s*(;.*)?", r) for r in requirements)
    return {m.group(1).lower(): m.group(2) for m in found if m}


def _needs() -> str:
    text = readme_text()
    start = text.index("**Needs:**")
    return " ".join(text[start:text.index("\n\n", start)].split())


def test_needs_names_the_declared_python_and_pytest() -> None:
    project, needs = _project(), _needs()
    python = re.search(r"Python (\d+\.\d+) or newer \((\d+\.\d+) to (\d+\.\d+) tested", needs)
    assert python, needs
    assert project["requires-python"] == f">={python.group(1)}", (project["requires-python"], python.group(0))
    tested = sorted((c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
                     if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)),
                    key=lambda v: tuple(map(int, v.split("."))))
    assert (python.group(2), python.group(3)) == (tested[0], tested[-1]), (python.group(0), tested)
    assert python.group(1) == tested[0], (python.group(0), tested)
    pytest_floor = re.search(r"pytest (\d+(?:\.\d+)*) or newer", needs)
    assert pytest_floor and pytest_floor.group(1) == _floors(project["dependencies"])["pytest"], needs


def test_the_extras_the_readme_installs_are_declared_and_dev_holds_what_it_says() -> None:
    extras, text = _project()["optional-dependencies"], readme_text()
    for name in ("docker", "ssh", "dev"):
        assert f"[{name}]" in text and name in extras, name
    dev = _floors(extras["dev"])
    comment = re.search(r"# dev = docker \+ ssh extras \+ pytest-xdist, -timeout, -rerunfailures", text)
    assert comment, "README's install block no longer says what the dev extra holds"
    for name, floor in {**_floors(extras["docker"]), **_floors(extras["ssh"])}.items():
        assert dev.get(name) == floor, f"dev has {name} {dev.get(name)}, the docker/ssh extras {floor}"
    assert {"pytest-xdist", "pytest-timeout", "pytest-rerunfailures"} <= set(dev), sorted(dev)


def test_the_too_old_example_uses_the_declared_docker_floor() -> None:
    example = re.search(r"`too old: docker (\S+) \(docker>=(\S+) needed\)`, `Hint: pip install -U 'docker>=(\S+)'`",
                        readme_text())
    assert example, "README's too-old example is gone or reworded"
    floor = _floors(_project()["optional-dependencies"]["docker"])["docker"]
    assert example.group(2) == example.group(3) == floor, (example.group(0), floor)
    assert tuple(map(int, example.group(1).split("."))) < tuple(map(int, floor.split("."))), example.group(0)
