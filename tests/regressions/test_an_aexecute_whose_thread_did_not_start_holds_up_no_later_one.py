"""An ``aexecute`` whose thread could not be started (``RuntimeError: can't start new thread``: a
process at its thread limit) raises that error. Since each call's thread waits for the thread of
the call before it on that kernel (2026-12-06), the next call's thread waited for the place of the
failed one, which no thread would ever take: every later ``aexecute`` on that kernel hung (found by
a breaker helper on 2026-12-06: the next call had no result after 10 s). It waits for the call
before the failed one now."""

from __future__ import annotations

import asyncio
import threading
import types

import pytest

from pytest_hermes_kernel import aexecute
from pytest_hermes_kernel.kernel import aio


class _Refused(threading.Thread):
    def start(self) -> None:
        raise RuntimeError("can't start new thread")


def test_the_next_aexecute_runs_after_one_whose_thread_did_not_start(make_kernel, monkeypatch) -> None:
    k = make_kernel()

    async def calls() -> str:
        with monkeypatch.context() as patched:
            patched.setattr(aio, "threading", types.SimpleNamespace(Thread=_Refused, Event=threading.Event))
            with pytest.raises(RuntimeError, match="can't start new thread"):
                await aexecute(k, "refused = 1")
        try:
            return (await asyncio.wait_for(aexecute(k, "6 * 7"), 10.0)).value
        except asyncio.TimeoutError:
            return "no result after 10 s"

    assert asyncio.run(calls()) == "42"
    assert k.execute("'refused' in dir()").value == "False"
