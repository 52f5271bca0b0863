"""The registry fuzz (``tests/registry_fuzz.py``): an ``exit`` cell that another thread's
``interrupt`` operation on the same key cut before it ran (``handle.interrupt()`` ends whatever
cell runs on the key's kernel) comes back ``interrupted``, which every other operation already
took as "not run"; the exit operation called it a problem, and a loaded ``-n 4`` run of
``tests/transports`` failed ``test_random_operations_from_threads[ssh-seed8]`` so once:
"thread 0 on o8-0: exit T8x0x14Z: status=interrupted; KeyboardInterrupt". An interrupted exit
cell with no interrupt on its key is still one.
"""

from __future__ import annotations

from typing import Any

from pytest_hermes_kernel.kernel.results import CellResult, KernelInfo
from tests.registry_fuzz import Fuzz, Worker

OWNER = "o8-0"


class _Registry:
    """Hands every cell the same result: cut by an interrupt before its first line printed."""

    def execute(self, key: Any, code: str, **_options: Any) -> CellResult:
        return CellResult(status="interrupted", kernel=KernelInfo(kernel_id="k1", transport="local"),
                          ename="KeyboardInterrupt", evalue="")


def _exit_with(interrupt_on: str | None) -> list[str]:
    fuzz = Fuzz(_Registry(), 8, [OWNER, "o8-1"], None)  # type: ignore[arg-type]
    if interrupt_on is not None:
        fuzz.window("interrupt", interrupt_on)  # another thread's interrupt operation, still running
    Worker(fuzz, 0, steps=1).op_exit(OWNER)
    return fuzz.problems


def test_an_exit_cell_cut_by_an_interrupt_on_its_key_is_not_a_problem() -> None:
    assert _exit_with(interrupt_on=OWNER) == []


def test_an_exit_cell_interrupted_with_no_interrupt_on_its_key_is_a_problem() -> None:
    for interrupt_on in (None, "o8-1"):
        problems = _exit_with(interrupt_on)
        assert len(problems) == 1 and "exit T8x0x1Z: status=interrupted" in problems[0], problems
