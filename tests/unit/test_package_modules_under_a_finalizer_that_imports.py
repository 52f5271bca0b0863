"""Seen: a test's teardown errored with ``RuntimeError: dictionary changed size during iteration``
out of the leak check's ``package_modules()`` (``list(sys.modules.items())``): a collection that
ran while it listed the modules finalized a socket docker-py had leaked (an engine gone), whose
``ResourceWarning`` imported a module. Any finalizer that imports did so. Now the modules are
copied in one step, which runs no finalizer in between.
"""

from __future__ import annotations

import gc
import sys
import types

from pytest_hermes_kernel.plugin.fixtures import package_modules

PREFIX = "hermes_test_imported_by_a_finalizer_"


class ImportsWhenCollected:
    """Freed only by the cyclic collector (it refers to itself); registers a module when it is."""

    count = 0

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        ImportsWhenCollected.count += 1
        name = f"{PREFIX}{ImportsWhenCollected.count}"
        sys.modules[name] = types.ModuleType(name)


def test_listing_the_packages_modules_survives_a_collection_that_imports() -> None:
    thresholds = gc.get_threshold()
    gc.collect()
    try:
        for _ in range(200):
            ImportsWhenCollected()
        # the next collection comes after a few dozen more allocations: while the modules are listed
        gc.set_threshold(gc.get_count()[0] + 40, 1, 1)
        assert len(sys.modules) > 200

        mine = package_modules()

        assert "pytest_hermes_kernel.plugin.fixtures" in mine
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()
        for name in [n for n in sys.modules.copy() if n.startswith(PREFIX)]:
            del sys.modules[name]
