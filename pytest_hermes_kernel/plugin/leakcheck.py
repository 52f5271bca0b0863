"""The leak checker plugin: registered only when ``--hermes-leak-check`` is not ``off``.

Before each test and after its fixture teardown it snapshots kernel processes and their
children, child processes of the test process, threads, pipes/files, kernel dirs and registry
entries (plus what transports register: containers, processes inside them, ssh sessions).
New ones are reported as :class:`HermesLeakWarning` (``warn``) or make the test error
(``error``), then ended so the next test starts clean. A part the check could not look at (a
probe that raised, a transport's host that did not answer) is never read as "nothing there": the
test gets a :class:`HermesLeakCheckIncompleteWarning` naming it, and the summary counts it. Kernels kept for post-mortem by
``--hermes-keep-failed`` are not leaks (they outlive the session on purpose, :mod:`.keep`); what
else the same test left still is. Mark intended leftovers with
``@pytest.mark.hermes_allow_leaks(reason)``.

A fixture of a wider scope than the test (module, class, package, session) holds what its setup
made until pytest tears it down: that is not a leak of the test whose setup ran it, and the check
neither reports nor ends it (it did both: a module-scoped kernel was killed after the module's
first test). What it still leaves after its own teardown is a leak of the test whose teardown
ended it.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import pytest

from ..errors import HermesLeakCheckIncompleteWarning, HermesLeakWarning, LeakError
from ..leaks.checker import LeakChecker, LeakReport
from ..leaks.probes import UNCHECKED, kernel_resources
from .report import stats_key
from .settings import settings_key

_before_key = pytest.StashKey[dict[str, Any]]()


class LeakCheckPlugin:
    """Plugin object; see module docstring."""

    def __init__(self, mode: str, grace: float) -> None:
        self.mode = mode
        self.checker = LeakChecker(grace=grace)
        self._handoff: tuple[pytest.Item, dict[str, Any]] | None = None
        self._held: dict[Any, set[str]] = {}  # live wider-scoped fixture -> what its setup made
        self._held_kernels: dict[Any, list[Any]] = {}  # live wider-scoped fixture -> the kernels its value is
        self._released: set[str] = set()  # what wider-scoped fixtures torn down since the last check made

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Any:
        """What a wider-scoped fixture's setup makes is held by it, not leaked by the test."""
        if fixturedef.scope == "function":
            return (yield)
        before = _identities(self.checker.before())
        try:
            return (yield)
        finally:
            self._held[fixturedef] = _identities(self.checker.before()) - before
            self._held_kernels[fixturedef] = _kernels_in(fixturedef.cached_result)

    def pytest_fixture_post_finalizer(self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
        """Torn down: what it made must be gone by the next check (it is compared again there)."""
        self._released |= self._held.pop(fixturedef, set())
        self._held_kernels.pop(fixturedef, None)

    def _held_now(self) -> tuple[set[str], set[str]]:
        """What live wider-scoped fixtures hold now: what their setup made, and whatever their
        kernels run on now (a kernel restarted in a test has a new worker, still the fixture's):
        ``(identities, kernel ids)``."""
        made = set().union(*self._held.values())
        kernels = [k for held in self._held_kernels.values() for k in held]
        return (made | _kernel_identities(kernels), {k.kernel_id for k in kernels}) if kernels else (made, set())

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        handoff, self._handoff = self._handoff, None
        # A clean check of the test just before ends where this test starts: its snapshots are
        # this test's "before" (no test code runs between the two; a leak found there, and the
        # cleanup that followed, means a fresh look instead). Halves the probes' cost per test.
        item.stash[_before_key] = handoff[1] if handoff is not None and handoff[0] is item else self.checker.before()
        return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: Any) -> Any:
        __tracebackhide__ = True  # the report is the message; this hook's source would only hide it
        try:
            result = yield
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as failed:  # a fixture's teardown that raised (pytest.fail included)
            try:  # still checked: what it left would otherwise be in every later "before", never seen
                self._check(item, nextitem)
            finally:
                raise failed  # noqa: B012 - the teardown's own error stays the test's error
        self._check(item, nextitem)
        return result

    def _check(self, item: pytest.Item, nextitem: Any) -> None:
        """Compare after ``item``'s fixture teardown; report, count and end what it left.

        :raises LeakError: if something leaked and the mode is ``error``.
        """
        __tracebackhide__ = True
        released, self._released = self._released, set()  # this check's, whatever it does below
        before = item.stash.get(_before_key, None)
        if before is None:
            return
        allowed = item.get_closest_marker("hermes_allow_leaks")
        if allowed is not None:
            if not allowed.args and "reason" not in allowed.kwargs:
                raise pytest.UsageError(f"{item.nodeid}: hermes_allow_leaks needs a reason: "
                                        "@pytest.mark.hermes_allow_leaks('why this test leaves something')")
            return
        if released:  # in "before" while its fixture held it: a leak if it outlived that fixture
            before = {kind: {k: v for k, v in snap.items() if k not in released} for kind, snap in before.items()}
        held, held_kernels = self._held_now()
        report = self.checker.after(before, exempt=_kept_resources(item) | held, exempt_kernels=held_kernels)
        clean = self.checker.last_clean
        if not report and clean is not None and isinstance(nextitem, pytest.Item):
            self._handoff = (nextitem, clean)
        self._report(item, report)

    def _report(self, item: pytest.Item, report: LeakReport) -> None:
        __tracebackhide__ = True
        stats = item.config.stash[stats_key]
        if report.unchecked:  # never a silent pass: say what this test's check could not see
            stats.unchecked.append(item.nodeid)
        if report:  # counted and ended first: a warning below may raise (-W error)
            stats.leaks.update(report.counts())
            self.checker.cleanup(report)
            text = report.format(item.nodeid) + ("\n" + report.format_unchecked(item.nodeid) if report.unchecked else "")
            if self.mode == "error":
                raise LeakError(text, leaks=report.counts())
            warnings.warn(HermesLeakWarning(text), stacklevel=1)
        if report.unchecked:
            warnings.warn(HermesLeakCheckIncompleteWarning(report.format_unchecked(item.nodeid)), stacklevel=1)


def _identities(snapshots: dict[str, Any]) -> set[str]:
    """Every identity the probes' snapshots name (parts not looked at left out)."""
    return {key for snap in snapshots.values() for key in snap if not key.startswith(UNCHECKED)}


def _kernels_in(cached: Any) -> list[Any]:
    """The kernel handles a fixture's value is, or holds in a list, tuple or dict (shallow)."""
    if cached is None or _HANDLE_MODULE not in sys.modules:  # no handle was ever made here
        return []
    from ..kernel.handle import KernelHandle

    value = cached[0]
    values = list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, (list, tuple)) \
        else [value]
    return [v for v in values if isinstance(v, KernelHandle)]


def _kernel_identities(kernels: list[Any]) -> set[str]:
    """Identities of the processes on this machine, kernel dirs and registry entries of
    ``kernels`` as they are now (their processes elsewhere: ``exempt_kernels`` of the check)."""
    ids = {k.kernel_id for k in kernels}
    dirs = {f"dir:{os.path.basename(k.launched.kernel_dir)}" for k in kernels
            if k.launched is not None and k.launched.kernel_dir}
    return kernel_resources(ids) | dirs | {f"entry:{kid}" for kid in ids}


_HANDLE_MODULE = f"{__name__.rsplit('.', 2)[0]}.kernel.handle"


def _kept_resources(item: pytest.Item) -> set[str]:
    """Identities of what the kernels kept for post-mortem (``--hermes-keep-failed``) hold: not leaks."""
    stats = item.config.stash[stats_key]
    kept = [handle for nodeid, handle in stats.kept if nodeid == item.nodeid]
    past = [record for nodeid, record in stats.kept_past if nodeid == item.nodeid]
    if not kept and not past:
        return set()
    launched = [h.launched for h in kept]  # None for a harness kernel: its launch is in the harness
    kdirs = [x.kernel_dir for x in launched if x is not None] + [r.locator.get("kernel_dir") for r in past]
    dirs = {f"dir:{os.path.basename(d)}" for d in kdirs if d}
    return kernel_resources({h.kernel_id for h in kept} | {r.kernel_id for r in past}) | dirs


def pytest_configure(config: pytest.Config) -> None:
    settings = config.stash[settings_key]
    if settings.leak_check != "off":
        config.pluginmanager.register(LeakCheckPlugin(settings.leak_check, settings.leak_grace or 0.0),
                                      "hermes-leak-checker")
