"""Found by a breaker helper (2026-12-06, fuzzing the scenario format): a ``[[cell]]`` whose
``action`` is a list or a table (``action = ["cell"]``), or an ``expect`` whose ``status``,
``reason`` or ``watchdog`` is one (``expect = { reason = {} }``), was a ``TypeError: unhashable
type`` traceback from the scenario's load instead of a ``ConfigError`` naming the file, the step
and the key, as every other bad value is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_hermes_kernel.catalog.format import load_scenario
from pytest_hermes_kernel.errors import ConfigError

STEPS = {
    "action a list": ('action = ["cell"]\ncode = "1"', "cell 1: action must be one of"),
    "action a table": ('action = { a = 1 }\ncode = "1"', "cell 1: action must be one of"),
    "status a list": ('code = "1"\nexpect = { status = ["ok"] }', "cell 1: expect status = ['ok']: must be one of"),
    "reason a table": ('code = "1"\nexpect = { reason = {} }', "cell 1: expect reason = {}: must be one of"),
    "watchdog a list": ('code = "1"\nexpect = { watchdog = [] }', "cell 1: expect watchdog = []: must be one of"),
}


@pytest.mark.parametrize("what", list(STEPS))
def test_the_load_names_the_step_and_key(tmp_path: Path, what: str) -> None:
    step, said = STEPS[what]
    path = tmp_path / "s.toml"
    path.write_text(f'[scenario]\nname = "s"\n[[cell]]\n{step}\n', encoding="utf-8")

    with pytest.raises(ConfigError) as caught:
        load_scenario(path)

    assert str(caught.value).startswith(f"{path}: {said}"), str(caught.value)
