"""Seen reproducing handed-2 B30 (2026-12-07): a cell over its budget, interrupted, came back with
the summary ``status=timeout; watchdog=interrupted; KeyboardInterrupt: ; over its 3 s budget: ...``:
an error without a message left a dangling ``: `` before the next part. It is named alone now."""

from __future__ import annotations

from pytest_hermes_kernel import CellResult, KernelInfo


def test_an_error_without_a_message_is_named_alone():
    r = CellResult(status="timeout", kernel=KernelInfo(kernel_id="k", transport="local", note="over its 3 s budget"),
                   ename="KeyboardInterrupt", evalue="", watchdog="interrupted")
    assert r.summary() == "status=timeout; watchdog=interrupted; KeyboardInterrupt; over its 3 s budget"


def test_an_error_with_a_message_keeps_it():
    r = CellResult(status="error", kernel=KernelInfo(kernel_id="k", transport="local"), ename="ValueError", evalue="bad")
    assert r.summary() == "status=error; ValueError: bad"
