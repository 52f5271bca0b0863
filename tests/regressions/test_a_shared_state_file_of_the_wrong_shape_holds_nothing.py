"""Found by a breaker helper (2026-12-06, malformed input): a shared container's state file in a
run dir that is JSON of another shape (``"members": 5``, written by hand or another version)
ended a sweep's "is it held?" in ``TypeError: 'int' object is not iterable``, and the run's own
reading of it (``members()``) in ``AttributeError`` for one that is no object. Such a file now
holds nothing, as an unreadable one does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers import sharing


@pytest.mark.parametrize("state", [{"members": 5}, {"members": "abc"}, {"members": None, "anchor": 3}])
def test_held_says_no(private_tmp: Path, state: object) -> None:
    path = private_tmp / "docker-x.json"
    path.write_text(json.dumps(state), encoding="utf-8")

    assert sharing.held(str(path)) is False


@pytest.mark.parametrize("state", [[1], {"members": 5}])
def test_the_runs_own_reading_finds_no_members(private_tmp: Path, state: object) -> None:
    resource = sharing.SharedResource("docker", "x", run_id="wrong-shape", directory=str(private_tmp))
    Path(resource.state_path).parent.mkdir(parents=True, exist_ok=True)
    Path(resource.state_path).write_text(json.dumps(state), encoding="utf-8")

    assert resource.members() == []
