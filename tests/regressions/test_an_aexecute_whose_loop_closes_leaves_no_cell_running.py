"""An ``aexecute`` cell whose event loop is closed under it, its task never cancelled (an
application that stops and closes its own loop; ``asyncio.run`` cancels its tasks, a bare
``loop.close()`` does not), is cancelled too: nobody can await its result any more.

It ran on to its own end (found by a breaker helper on 2026-12-05): the kernel stayed busy, its
side effects landed after the caller had gone, and the next ``execute()`` waited behind it, for
ever with no budget. And ``aexecute`` checked its arguments only on the cell's thread or at the
cancel: a registry or a transport name in place of the kernel raised a bare ``AttributeError:
'KernelRegistry' object has no attribute 'kernel_id'``, and an ``on_cancelled`` that cannot be
called was taken, its ``TypeError`` replacing the ``CancelledError`` of the first cancelled cell.
"""

from __future__ import annotations

import asyncio

import pytest

from pytest_hermes_kernel import KernelRegistry, aexecute
from pytest_hermes_kernel.contract._probes import CellStarted, run_in_thread

SETTLE_S = 15.0


def test_a_cell_whose_loop_is_closed_under_it_is_cancelled(make_kernel) -> None:
    probe = CellStarted()
    k = make_kernel(tools=probe.tools())
    k.execute("x = 1")
    loop = asyncio.new_event_loop()
    try:
        loop.create_task(aexecute(k, probe.CODE + "import time\ntime.sleep(60)\nx = 2"))
        loop.run_until_complete(loop.run_in_executor(None, probe.wait))
    finally:
        loop.close()  # the task is left pending: nobody cancels it

    after = run_in_thread(k, "x").result(timeout=SETTLE_S)  # it waited the whole 60 s

    assert after.status == "ok" and after.value == "1", after.summary()
    assert not after.kernel.state_lost


@pytest.mark.parametrize("kernel, says", [
    ("local", "aexecute runs a cell on a KernelHandle, not on str 'local'"),
    (KernelRegistry, "registry.get_or_start(key)"),
])
def test_what_is_no_kernel_is_refused_naming_what_to_pass(kernel, says) -> None:
    async def call() -> None:
        if kernel is KernelRegistry:
            with KernelRegistry(background_reaper=False) as registry:
                await aexecute(registry, "1")  # type: ignore[arg-type]
        else:
            await aexecute(kernel, "1")  # type: ignore[arg-type]

    with pytest.raises(TypeError) as caught:
        asyncio.run(call())
    assert says in str(caught.value), str(caught.value)


def test_an_on_cancelled_that_cannot_be_called_is_refused_before_the_cell_runs(make_kernel) -> None:
    k = make_kernel()
    k.execute("m = 0")
    with pytest.raises(TypeError, match="on_cancelled must be a callable"):
        asyncio.run(aexecute(k, "m += 1", on_cancelled="print"))  # type: ignore[arg-type]
    assert k.execute("m").value == "0", "the refused cell ran"
