"""Every public method and property of KernelRegistry and KernelHandle is used by some test.

The names come from the classes themselves (their own and inherited members defined in this
package, e.g. the registry's idle reaping), so a new public method without a test fails here.
A use is ``.name`` in this repo's tests or in the contract suite they run (``tests/contract``
runs ``pytest_hermes_kernel.contract`` on every transport); the tests written for each method
are the ones named in the mutation report's survivors (``benchmarks/mutation.py``, issue #13).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.kernel.registry import KernelRegistry
from tests.support import REPO_ROOT

SEARCHED = [REPO_ROOT / "tests", REPO_ROOT / "pytest_hermes_kernel" / "contract"]


def public_members(cls: type) -> list[str]:
    """Public methods and properties of ``cls`` that this package defines (not ``object``'s)."""
    names = set()
    for klass in inspect.getmro(cls):
        if not klass.__module__.startswith("pytest_hermes_kernel"):
            continue
        names |= {n for n, v in vars(klass).items()
                  if not n.startswith("_") and (callable(v) or isinstance(v, property))}
    return sorted(names)


def _test_sources() -> str:
    here = Path(__file__).resolve()
    files = [p for root in SEARCHED for p in root.rglob("*.py") if p.resolve() != here]
    return "\n".join(p.read_text() for p in files)


def test_the_classes_have_the_public_api_we_check():
    assert {"lease", "get_or_start", "execute", "discard", "shutdown_child", "reap_once",
            "seconds_to_next_expiry"} <= set(public_members(KernelRegistry))
    assert {"start", "execute", "interrupt", "cancel", "budget_paused", "restart", "shutdown", "close",
            "alive", "generation"} <= set(public_members(KernelHandle))


@pytest.mark.parametrize("cls", [KernelRegistry, KernelHandle], ids=lambda c: c.__name__)
def test_every_public_member_is_used_by_a_test(cls):
    sources = _test_sources()
    unused = [name for name in public_members(cls) if not re.search(rf"\.{name}\b", sources)]
    assert not unused, f"{cls.__name__} members no test uses: {unused}"
