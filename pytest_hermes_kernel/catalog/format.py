"""A scenario file read and checked: every table, key and value, before anything runs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from ..errors import ConfigError
from ..kernel.options import KernelOptions, built, is_seconds
from ..kernel.results import Reason, Status, WatchdogOutcome
from ..transports import transport_names

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CELL_KEYS = {"code", "owner", "child", "timeout", "threads", "interrupt_after", "action", "expect"}
EXPECT_KEYS = {"status", "value", "ename", "stdout", "stdout_contains", "stderr_contains", "text_contains", "note_contains",
               "state_lost", "reason", "watchdog", "exit_code", "signal", "oom_killed", "stdout_truncated",
               "max_duration_s", "same_pid", "generation", "reconnected"}
#: The keys each ``action`` of a step reads; any other key of the step was ignored (an
#: ``expect`` on a restart checked nothing, and the scenario passed).
ACTION_KEYS: dict[str, set[str]] = {
    "cell": CELL_KEYS - {"action"}, "restart": {"owner", "child"}, "shutdown_child": {"child"},
    "shutdown_owner": {"owner"}, "reap": set()}
ACTIONS = set(ACTION_KEYS)
#: The keys of each table a scenario file may have (``fault`` and ``kernel`` are checked by what
#: they parse into). A key outside them was ignored: ``[[faults]]`` ran the scenario without its fault.
TABLE_KEYS: dict[str, set[str] | None] = {
    "scenario": {"name", "source", "description", "transports"}, "kernel": None, "fault": None, "cell": None,
    "registry": {"max_kernels", "idle_timeout"}, "expect_end": {"kernels", "processes"}}


def _count(least: int) -> tuple[Callable[[object], bool], str]:
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= least), f"an integer >= {least}"


#: What the value of each option key of a step, ``[registry]`` and ``[expect_end]`` must be (they
#: were read only by the runner: ``threads = 0`` was a ``ValueError`` traceback from it,
#: ``kernels = "1"`` a failure "expected 1 registry entries, got 1").
VALUE_CHECKS: dict[str, tuple[Callable[[object], bool], str]] = {
    "timeout": (lambda v: is_seconds(v, positive=True), "a finite number of seconds > 0"),
    "interrupt_after": (lambda v: is_seconds(v, positive=True), "a finite number of seconds > 0"),
    "threads": _count(1), "max_kernels": _count(1), "kernels": _count(0), "processes": _count(0),
    "idle_timeout": (lambda v: is_seconds(v, positive=False), "a finite number of seconds >= 0"),
    "owner": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "child": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
}


def _bad_value(where: str, table: dict[str, Any]) -> None:
    """:raises ConfigError: naming ``where`` (the file and table or step) and the first key of
    ``table`` whose value :data:`VALUE_CHECKS` refuses."""
    for key, value in table.items():
        ok, what = VALUE_CHECKS.get(key, (None, ""))
        if ok is not None and not ok(value):
            raise ConfigError(f"{where}: {key} must be {what}, not {value!r}")


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario file."""

    name: str
    path: Path
    source: str
    description: str
    transports: tuple[str, ...] | None
    kernel: dict[str, Any]
    registry: dict[str, Any]
    faults: tuple[dict[str, Any], ...]
    steps: tuple[dict[str, Any], ...]
    expect_end: dict[str, Any] = field(default_factory=dict)


def load_scenario(path: Path) -> Scenario:
    """Parse and validate a scenario file.

    :raises ConfigError: naming the file and the offending key when the file is malformed.
    """
    try:
        data = tomllib.loads(_utf8_text(path))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable TOML scenario: {exc}") from None
    head = data.get("scenario")
    if not isinstance(head, dict) or "name" not in head:
        raise ConfigError(f"{path}: needs a [scenario] table with a name")
    _check_tables(path, data)
    steps = data.get("cell", [])
    if not steps:
        raise ConfigError(f"{path}: needs at least one [[cell]]")
    for i, step in enumerate(steps, 1):
        _check_step(path, i, step)
    try:
        built(KernelOptions, data.get("kernel", {}))
    except ConfigError as exc:
        raise ConfigError(f"{path}: [kernel]: {exc}") from None
    transports = head.get("transports")
    return Scenario(name=head["name"], path=path, source=head.get("source", ""),
                    description=head.get("description", ""),
                    transports=tuple(transports) if transports else None, kernel=data.get("kernel", {}),
                    registry=data.get("registry", {}), faults=tuple(data.get("fault", [])), steps=tuple(steps),
                    expect_end=data.get("expect_end", {}))


def _check_step(path: Path, i: int, step: dict[str, Any]) -> None:
    """Refuse a ``[[cell]]`` table with a key its action does not read (see :data:`ACTION_KEYS`)
    or an expectation that can never be met or checked.

    :raises ConfigError: naming the file, the step and the key.
    """
    if not isinstance(step.get("code", ""), str) or not isinstance(step.get("expect", {}), dict):
        raise ConfigError(f"{path}: cell {i}: code must be a string and expect a table "
                          f"(expect = {{ status = \"ok\" }}), not {step.get('code')!r} / {step.get('expect')!r}")
    bad = set(step) - CELL_KEYS
    if bad:
        raise ConfigError(f"{path}: cell {i}: unknown keys {sorted(bad)}; known: {sorted(CELL_KEYS)}")
    if not isinstance(step.get("action", "cell"), str) or step.get("action", "cell") not in ACTIONS:  # (a list: a
        raise ConfigError(f"{path}: cell {i}: action must be one of {sorted(ACTIONS)}, "  # TypeError, unhashable)
                          f"not {step.get('action')!r}")
    if step.get("action", "cell") == "cell" and "code" not in step:
        raise ConfigError(f"{path}: cell {i}: needs code")
    bad = set(step.get("expect", {})) - EXPECT_KEYS
    if bad:
        raise ConfigError(f"{path}: cell {i}: unknown expectations {sorted(bad)}; known: {sorted(EXPECT_KEYS)}")
    for key, want in step.get("expect", {}).items():
        problem = _bad_expectation(key, want)
        if problem:
            raise ConfigError(f"{path}: cell {i}: expect {key} = {want!r}: {problem}")
    action = step.get("action", "cell")
    if action == "shutdown_child" and "child" not in step:
        raise ConfigError(f"{path}: cell {i}: action = \"shutdown_child\" needs child (the delegated child to end)")
    _bad_value(f"{path}: cell {i}", step)
    ignored = sorted(set(step) - ACTION_KEYS[action] - {"action"})
    if ignored:  # a restart's expect, a reap's code: never read, and the scenario passed
        raise ConfigError(f"{path}: cell {i}: action = \"{action}\" does not take {', '.join(ignored)} (the step never "
                          f"reads it: only a cell step runs code and checks expect); it takes "
                          f"{', '.join(sorted(ACTION_KEYS[action])) or 'no other key'}")
    if step.get("expect", {}).get("same_pid") and step.get("threads", 1) in (0, 1):
        raise ConfigError(f"{path}: cell {i}: expect same_pid = true: needs threads >= 2 (one cell always runs "
                          "on one kernel)")


def _utf8_text(path: Path) -> str:
    """``path``'s text (TOML is UTF-8).

    :raises ConfigError: naming the line and byte when it is not UTF-8 (a file saved in Latin-1
        was a ``UnicodeDecodeError`` traceback from deep in ``pathlib``).
    """
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not a readable TOML scenario: line {line} is not UTF-8 (byte "
                          f"0x{data[exc.start]:02x}); TOML files are UTF-8. Hint: save it as UTF-8") from None


def _bad_expectation(key: str, want: object) -> str | None:
    """Why ``want`` can never be what a result has under ``key`` (a string where a number is
    compared: ``value = 2`` against the repr ``'2'``; ``same_pid = "no"``, read as true), or ``None``."""
    if key in _ONE_OF:
        return None if isinstance(want, str) and want in _ONE_OF[key] else f"must be one of {sorted(_ONE_OF[key])}"
    if key == "same_pid":
        return None if want is True else "only true is checked (all the step's threads got one kernel)"
    if key in ("state_lost", "oom_killed", "stdout_truncated", "reconnected"):
        return None if isinstance(want, bool) else "must be true or false"
    if key in ("exit_code", "signal", "generation"):
        return None if isinstance(want, int) and not isinstance(want, bool) else "must be an integer"
    if key == "max_duration_s":  # inf: a check no step could fail
        return None if is_seconds(want, positive=True) else "must be a finite number of seconds > 0"
    if key.endswith("_contains") and want == "":
        return "every text contains '': the check could never fail (give the text to look for)"
    return None if isinstance(want, str) else "must be a string (value is the repr: value = \"2\")"


#: Expectations with a fixed set of values (:mod:`~.kernel.results`: ``Status``, ``Reason``, ``WatchdogOutcome``).
_ONE_OF: dict[str, set[object]] = {"status": set(get_args(Status)), "reason": set(get_args(Reason)),
                                   "watchdog": set(get_args(WatchdogOutcome))}


def _check_tables(path: Path, data: dict[str, Any]) -> None:
    """Refuse a table or key a scenario file does not have (see :data:`TABLE_KEYS`), and a
    ``[scenario]`` whose name or transports are not what they say.

    :raises ConfigError: naming the file, the table and the key.
    """
    for table, value in data.items():
        if table not in TABLE_KEYS:
            raise ConfigError(f"{path}: unknown table [{table}]; a scenario has "
                              f"{', '.join(f'[{t}]' for t in TABLE_KEYS)} (fault and cell as [[fault]], [[cell]])")
        if table in ("fault", "cell") and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            raise ConfigError(f"{path}: {table} must be [[{table}]] tables, not {value!r}")
        if table not in ("fault", "cell") and not isinstance(value, dict):  # `kernel = 3`: a TypeError traceback
            raise ConfigError(f"{path}: {table} must be a [{table}] table, not {value!r}")
        known = TABLE_KEYS[table]
        bad = sorted(set(value) - known) if known is not None and isinstance(value, dict) else []
        if bad:
            raise ConfigError(f"{path}: [{table}]: unknown keys {bad}; known: {sorted(known or ())}")
        if table in ("registry", "expect_end"):
            _bad_value(f"{path}: [{table}]", value)
    head = data["scenario"]
    if not isinstance(head["name"], str) or not head["name"]:
        raise ConfigError(f"{path}: [scenario]: name must be a non-empty string, not {head['name']!r}")
    if "::" in head["name"] or not head["name"].isprintable():  # the item's node id: `a::b` could not be selected
        raise ConfigError(f"{path}: [scenario]: name {head['name']!r} cannot be part of a node id (no '::', no control "
                          "characters): pytest could not select the test by the id it prints")
    for key in ("source", "description"):  # shown in reports: a list there read as its repr
        if key in head and not isinstance(head[key], str):
            raise ConfigError(f"{path}: [scenario]: {key} must be a string, not {head[key]!r}")
    transports = head.get("transports")
    if transports is not None and (not isinstance(transports, list) or not transports
                                   or not all(isinstance(t, str) for t in transports)):
        raise ConfigError(f"{path}: [scenario]: transports must be a non-empty list of transport names "
                          f"(transports = [\"local\", \"docker\"]), not {transports!r}")
    unknown = [t for t in transports or () if t not in transport_names()]
    if unknown:  # a typo ran the scenario nowhere, and nothing said so
        raise ConfigError(f"{path}: [scenario]: transports: unknown transport {', '.join(map(repr, unknown))}; "
                          f"known: {', '.join(transport_names())}")


