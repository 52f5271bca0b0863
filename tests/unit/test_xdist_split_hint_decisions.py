"""When the xdist split hint (:mod:`pytest_hermes_kernel.plugin.xdist_split`) applies to a test,
and what it says: the parts the plugin runs (tests/plugin/test_a_shared_kernels_missing_state_
under_xdist_load_names_the_split.py) cannot reach with pytest-xdist 3.8, whose ``loadgroup``
keeps no marked test with its group (pytest-dev/pytest-xdist#1386)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_hermes_kernel.plugin.xdist_split import SplitHint


class _Item:
    """What the plugin reads of a test item: its node id and ``xdist_group`` marks."""

    def __init__(self, nodeid: str, *groups: str) -> None:
        self.nodeid = nodeid
        self.marks = [pytest.mark.xdist_group(g).mark for g in groups]

    def iter_markers(self, name: str):
        return iter(self.marks if name == "xdist_group" else [])


@pytest.mark.parametrize(("dist", "item", "spread"), [
    ("load", _Item("t.py::test_a", "agent"), True),
    ("worksteal", _Item("t.py::test_a"), True),
    ("loadgroup", _Item("t.py::test_a"), True),  # unmarked: spread as under load
    ("loadgroup", _Item("t.py::test_a", "agent"), True),  # marked, not grouped (#1386)
    ("loadgroup", _Item("t.py::test_a@agent", "agent"), False),  # kept with its group
    ("loadgroup", _Item("t.py::test_a@a_b", "b", "a"), False),
])
def test_which_tests_xdist_may_have_run_apart_from_their_module(dist, item, spread) -> None:
    assert SplitHint(dist, "gw0", 2)._spread(item) is spread


def test_the_hint_names_each_fixture_once_with_its_first_error() -> None:
    hint = SplitHint("load", "gw1", 3)
    registry, kernel = object(), object()
    hint.fixtures.update({registry: ("registry", "session"), kernel: ("kernel", "module")})

    text = hint.hint([(registry, "k1", "NameError", "name 'notes' is not defined\nmore"),
                      (registry, "k1", "KeyError", "'x'"), (kernel, "k2", "AttributeError", "")])

    assert text.splitlines() == [
        "fixture 'registry' (scope session) holds kernel k1, whose cell raised NameError: name 'notes' is not defined",
        "fixture 'kernel' (scope module) holds kernel k2, whose cell raised AttributeError",
        "Those kernels are this worker's (gw1) own: under -n 3 with --dist load, pytest-xdist runs one module's tests "
        "on different workers, each with its own module and session fixtures, so state another test set may be in "
        "another worker's kernel. Run the tests that share a kernel in one worker: --dist loadfile (or loadscope). "
        "README: One kernel for several tests.",
    ]


@pytest.mark.parametrize(("ename", "noted"), [("NameError", True), ("UnboundLocalError", True), ("KeyError", True),
                                               ("AttributeError", True), ("ZeroDivisionError", False), (None, False)])
def test_only_a_missing_name_key_or_attribute_is_noted(ename, noted) -> None:
    hint = SplitHint("load", "gw0", 2)
    hint._errors = []
    result = SimpleNamespace(ename=ename, evalue="x")

    hint.on_event("result", SimpleNamespace(holder=None, kernel_id="k"), result)
    hint.on_event("raised", SimpleNamespace(holder=None, kernel_id="k"), result)

    assert len(hint._errors) == int(noted)
