"""Unit: every exception of the package lives in errors.py, carries typed, documented facts and
pickles with them (pytest-xdist and the host harness ship errors across processes).

The classes are found by introspection, so a class added to errors.py is covered at once; a
fact that has no sample value here fails :func:`test_every_fact_has_a_sample` until one is added.
"""

from __future__ import annotations

import ast
import inspect
import pickle
from pathlib import Path

import pytest

from pytest_hermes_kernel import errors
from pytest_hermes_kernel.kernel.results import CellResult, KernelInfo

PACKAGE = Path(errors.__file__).resolve().parent
RUNNER = PACKAGE / "kernel" / "runner"  # stdlib only, never imports the package: its own few errors

INFO = KernelInfo(kernel_id="k1", transport="local", generation=2, state_lost=True, reason="died", signal=9)
SAMPLES = {
    "kernel_id": "k1", "info": INFO, "result": CellResult(status="timeout", kernel=INFO, watchdog="reset"),
    "leaks": {"kernel dir": 1}, "closed_by_us": True, "permanent": True, "timed_out": True, "host_pid": 4242,
    "log_tail": "line 1\nline 2", "container_id": "c0ffee", "path": "/tmp/run.lock", "timeout": 600.0,
    "from_state": "IDLE", "to_state": "BUSY", "problem": "a symlink", "exit_code": 1, "generation": 3, "returned": "None",
    "sent": False, "held_by": "execute()", "size_bytes": 300 * 2**20, "limit_bytes": 256 * 2**20, "image": "no-such-image:1",
}

EXCEPTIONS = [cls for _, cls in inspect.getmembers(errors, inspect.isclass)
              if issubclass(cls, BaseException) and cls.__module__ == errors.__name__]
ERRORS = [cls for cls in EXCEPTIONS if issubclass(cls, errors.HermesKernelError)]
WARNINGS = [cls for cls in EXCEPTIONS if issubclass(cls, Warning)]


def _facts(cls: type[errors.HermesKernelError]) -> dict[str, object]:
    return {name: SAMPLES[name] for name in errors.fact_names(cls)}


def test_every_exception_is_an_error_or_a_leak_check_warning():
    assert {c.__name__ for c in EXCEPTIONS} - {c.__name__ for c in ERRORS} == {"HermesLeakWarning",
                                                                               "HermesLeakCheckIncompleteWarning"}
    assert set(errors.__all__) == {c.__name__ for c in EXCEPTIONS}


def test_no_exception_class_is_defined_outside_errors_py():
    outside = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" or path.is_relative_to(RUNNER):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(_names_exception(b) for b in node.bases):
                outside.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: class {node.name}")
    assert not outside, "exception classes belong in errors.py:\n" + "\n".join(outside)


def _names_exception(base: ast.expr) -> bool:
    name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
    return name.endswith(("Error", "Exception", "Warning", "Timeout", "Failure", "Closed"))


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_fact_has_a_sample(cls):
    missing = [name for name in errors.fact_names(cls) if name not in SAMPLES]
    assert not missing, f"{cls.__name__} has facts without a sample value in this test: {missing}"


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_fact_is_documented(cls):
    doc = "".join(inspect.getdoc(c) or "" for c in cls.__mro__ if issubclass(c, errors.HermesKernelError))
    undocumented = [name for name in errors.fact_names(cls) if f":param {name}:" not in doc]
    assert not undocumented, f"{cls.__name__}'s docstring has no :param: for {undocumented}"


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_round_trip_keeps_type_message_and_every_fact(cls):
    facts = _facts(cls)
    exc = cls("something broke: see facts", **facts)

    back = pickle.loads(pickle.dumps(exc))

    assert type(back) is cls
    assert str(back) == "something broke: see facts" and back.message == exc.message
    assert back.facts == facts == exc.facts
    for name, value in facts.items():
        assert getattr(back, name) == value
    assert isinstance(back, errors.HermesKernelError)
    for builtin in (ValueError, ConnectionError, TimeoutError, PermissionError, AssertionError):
        assert isinstance(back, builtin) == isinstance(exc, builtin)


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_round_trip_without_facts_keeps_the_defaults(cls):
    plain = cls("plain")

    back = pickle.loads(pickle.dumps(plain))

    assert type(back) is cls and str(back) == "plain" and back.facts == plain.facts


def test_facts_are_keyword_only_and_unknown_ones_are_refused():
    with pytest.raises(TypeError):
        errors.KernelStartError("no such fact", colour="blue")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        errors.KernelStartError("positional fact", "k1")  # type: ignore[misc]


def test_a_died_error_knows_its_kernel_from_its_info():
    assert errors.KernelDiedError("gone", info=INFO).kernel_id == "k1"
    assert errors.HostGoneError("host gone", host_pid=7).kernel_id is None


def test_builtin_mixins_are_where_callers_catch_them():
    assert issubclass(errors.CellTimeoutError, TimeoutError)
    assert issubclass(errors.SharedLockTimeout, TimeoutError)
    assert issubclass(errors.TransportLostError, ConnectionError)
    assert issubclass(errors.ChannelClosed, errors.TransportLostError)
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.ToolCallRefused, PermissionError)
    assert issubclass(errors.HostGoneError, errors.KernelDiedError)
    assert issubclass(errors.ScenarioFailure, AssertionError)


@pytest.mark.parametrize("cls", WARNINGS, ids=lambda c: c.__name__)
def test_warnings_pickle(cls):
    back = pickle.loads(pickle.dumps(cls("leaked kernel dir: /tmp/x")))
    assert type(back) is cls and str(back) == "leaked kernel dir: /tmp/x"
