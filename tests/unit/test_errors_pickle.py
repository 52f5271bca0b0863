"""Unit: every exception of the package pickles with its facts (xdist ships them across processes)."""

from __future__ import annotations

import inspect
import pickle

import pytest

from pytest_hermes_kernel import errors
from pytest_hermes_kernel.kernel.channel import ChannelClosed
from pytest_hermes_kernel.kernel.results import CellResult, KernelInfo

INFO = KernelInfo(kernel_id="k1", transport="local", generation=2, state_lost=True, reason="died", signal=9)
FACTS = {"kernel_id": "k1", "info": INFO, "result": CellResult(status="timeout", kernel=INFO, watchdog="reset"),
         "leaks": {"kernel dir": 1}, "closed_by_us": False}

ERROR_CLASSES = [cls for _, cls in inspect.getmembers(errors, inspect.isclass)
                 if issubclass(cls, errors.HermesKernelError) and cls.__module__ == errors.__name__]


def test_every_error_class_is_covered():
    names = {cls.__name__ for cls in ERROR_CLASSES}
    assert {"HermesKernelError", "KernelDiedError", "CellInterrupted", "ToolCallRefused", "LeakError"} <= names
    assert len(ERROR_CLASSES) >= 17


@pytest.mark.parametrize("cls", ERROR_CLASSES + [ChannelClosed], ids=lambda c: c.__name__)
def test_round_trip_keeps_type_message_and_facts(cls):
    exc = cls("something broke: see facts", **FACTS)

    back = pickle.loads(pickle.dumps(exc))

    assert type(back) is cls
    assert str(back) == "something broke: see facts" and back.message == exc.message
    assert back.facts == FACTS
    for name, value in FACTS.items():
        assert getattr(back, name) == value
    assert isinstance(back, errors.HermesKernelError)
    for builtin in (ValueError, ConnectionError, TimeoutError, PermissionError):
        assert isinstance(back, builtin) == isinstance(exc, builtin)


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_round_trip_without_facts(cls):
    back = pickle.loads(pickle.dumps(cls("plain")))
    assert type(back) is cls and str(back) == "plain" and back.facts == {}


def test_builtin_mixins_are_where_callers_catch_them():
    assert issubclass(errors.CellTimeoutError, TimeoutError)
    assert issubclass(errors.TransportLostError, ConnectionError)
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.ToolCallRefused, PermissionError)


def test_leak_warning_pickles():
    back = pickle.loads(pickle.dumps(errors.HermesLeakWarning("leaked kernel dir: /tmp/x")))
    assert type(back) is errors.HermesLeakWarning and str(back) == "leaked kernel dir: /tmp/x"
