"""Pickling or copying a ``KernelHandle`` or a ``KernelRegistry`` is refused with an error that
names it and says what to do instead.

A handle is the one connection to its kernel, a registry the one owner of its kernels. Pickling
either (an argument of a ``spawn`` multiprocessing child, a ``deepcopy`` of a config holding one)
failed with ``TypeError: cannot pickle 'socket' object`` (or ``'_thread.RLock' object``), naming
neither. ``copy.copy`` worked and made a second handle that shared the kernel's channel but not
its running cell: ``interrupt()`` on the original of a cell run through the copy did nothing,
silently, and the cell ran on.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from pytest_hermes_kernel import KernelRegistry

COPIES = [pickle.dumps, copy.copy, copy.deepcopy]


@pytest.mark.parametrize("how", COPIES, ids=["pickle", "copy", "deepcopy"])
def test_a_handle_is_not_pickled_or_copied(make_kernel, how) -> None:
    k = make_kernel()
    k.execute("x = 1")

    with pytest.raises(TypeError, match=f"KernelHandle.*{k.kernel_id}.*cannot be pickled or copied"):
        how(k)
    assert k.execute("x").value == "1"


@pytest.mark.parametrize("how", COPIES, ids=["pickle", "copy", "deepcopy"])
def test_a_registry_is_not_pickled_or_copied(how) -> None:
    with KernelRegistry(background_reaper=False) as registry:
        with pytest.raises(TypeError, match="KernelRegistry cannot be pickled or copied"):
            how(registry)
