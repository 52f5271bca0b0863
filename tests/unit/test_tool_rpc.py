"""What the host side of tool RPC promises (kernel/rpc.py), in process: which names a tool may
have, which calls a cell's authority refuses, and what ``result.tool_calls`` records of each call
(name, the arguments' preview of at most 80 characters, ok, duration). Written against the
survivors of the mutation run of ``kernel/rpc.py`` (``benchmarks/mutation.py``, issue #13).
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel.errors import ConfigError, ToolCallRefused
from pytest_hermes_kernel.kernel.rpc import STILL_RUNNING, CellAuthority, ToolTable


@pytest.mark.parametrize("name", ["_private", "__dunder__", "not-an-identifier", "two words", ""])
def test_a_tool_name_must_be_a_public_identifier(name):
    table = ToolTable()
    with pytest.raises(ConfigError, match="public Python identifier"):
        table.register(name, len)
    assert table.names() == []


def test_a_public_name_is_offered_and_can_be_taken_back():
    table = ToolTable({"lookup": len, "lookup_2": len})
    assert table.names() == ["lookup", "lookup_2"]
    table.unregister("lookup")
    assert table.names() == ["lookup_2"] and table.get("lookup") is None


def test_a_settled_cells_authority_refuses_even_its_own_cells_calls():
    authority = CellAuthority("cell-1", ToolTable({"add": lambda a, b: a + b}), max_calls=10)
    assert authority.dispatch("cell-1", "add", {"a": 1, "b": 2}) == 3

    authority.retire()

    with pytest.raises(ToolCallRefused, match="No active cell"):
        authority.dispatch("cell-1", "add", {"a": 1, "b": 2})
    assert len(authority.calls) == 1, "a refusal is not counted"


def test_a_running_cells_authority_refuses_another_cells_calls():
    authority = CellAuthority("cell-2", ToolTable({"add": lambda a, b: a + b}), max_calls=10)

    with pytest.raises(ToolCallRefused, match="No active cell"):
        authority.dispatch("cell-1", "add", {"a": 1, "b": 2})
    assert authority.calls == []


def test_each_call_is_recorded_with_its_outcome_and_how_long_it_took():
    def slow() -> str:
        time.sleep(0.05)
        return "done"

    def failing() -> None:
        raise ValueError("no")

    authority = CellAuthority("c", ToolTable({"slow": slow, "failing": failing}), max_calls=10)
    began = time.perf_counter()
    authority.dispatch("c", "slow", {})
    between = time.perf_counter()
    with pytest.raises(ValueError):
        authority.dispatch("c", "failing", {})
    ended = time.perf_counter()

    assert [(c["name"], c["args"], c["ok"]) for c in authority.calls] == [("slow", "{}", True), ("failing", "{}", False)]
    # seconds, each within its own dispatch as this test's clock (perf_counter, the recorder's) saw it
    assert 0.05 <= authority.calls[0]["duration_s"] <= between - began
    assert 0.0 <= authority.calls[1]["duration_s"] <= ended - between


def test_a_call_still_running_is_listed_not_ok_running_and_with_no_duration_yet():
    """What a cancelled or interrupted cell's ``tool_calls`` says of a call that had not returned;
    the list it got stays as it was when the call returns later (it was the live records)."""
    seen: list[dict[str, object]] = []
    authority = CellAuthority("c", ToolTable({"probe": lambda: seen.extend(authority.snapshot())}), max_calls=10)

    authority.dispatch("c", "probe", {})

    assert seen == [{"name": "probe", "args": "{}", "ok": False, "duration_s": 0.0, "running": True,
                     "error": STILL_RUNNING}]
    [done] = authority.snapshot()
    assert done["ok"] and done["duration_s"] > 0 and "running" not in done and "error" not in done


@pytest.mark.parametrize(("length", "shown"), [(79, 79), (80, 80), (81, 80), (200, 80)])
def test_the_arguments_preview_is_cut_to_80_characters_ending_in_dots(length, shown):
    args = {"s": "x" * (length - len(repr({"s": ""})))}  # repr(args) is ``length`` characters
    assert len(repr(args)) == length
    authority = CellAuthority("c", ToolTable({"echo": lambda s: s}), max_calls=10)

    authority.dispatch("c", "echo", args)

    preview = authority.calls[0]["args"]
    assert len(preview) == shown
    assert preview == (repr(args) if length <= 80 else repr(args)[:77] + "...")
