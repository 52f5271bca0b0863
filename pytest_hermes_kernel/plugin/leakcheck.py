"""The leak checker plugin: registered only when ``--hermes-leak-check`` is not ``off``.

Before each test and after its fixture teardown it snapshots kernel processes and their
children, child processes of the test process (a child subreaper during the test:
:class:`Adoption`), threads, pipes/files, kernel dirs and registry entries (plus what
transports register: containers, processes inside them, ssh sessions). New ones are reported
as :class:`HermesLeakWarning` (``warn``) or make the test error (``error``; a case of the
contract suite errors under ``warn`` too: a leak there is the backend's), then ended so the next test starts clean. A part the check could not look at (a
probe that raised, a transport's host that did not answer) is never read as "nothing there": the
test gets a :class:`HermesLeakCheckIncompleteWarning` naming it, and the summary counts it. Kernels kept for post-mortem by
``--hermes-keep-failed`` are not leaks (they outlive the session on purpose, :mod:`.keep`); what
else the same test left still is. Mark intended leftovers with
``@pytest.mark.hermes_allow_leaks(reason)``.

A fixture of a wider scope than the test (module, class, package, session) holds what its setup
made until pytest tears it down: that is not a leak of the test whose setup ran it, and the check
neither reports nor ends it (it did both: a module-scoped kernel was killed after the module's
first test). It also holds every kernel of a handle or registry made in its setup, whenever that
kernel starts or restarts (a session-scoped registry's kernel started by a test, the next worker
of a restarted module-scoped kernel: :mod:`pytest_hermes_kernel.kernel.holders`), wherever it
runs (its processes, kernel dir and registry entry here; what a transport finds of it on a
container or ssh host, by its kernel id). What it still leaves after its own teardown is a leak
of the test whose teardown ended it. That test's own leftovers are looked for first, before the
wider fixtures end (one may provide the host a transport the test closed is probed on), and what
their teardown left is looked for after it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Collection, Iterator
from typing import Any

import pytest

from ..errors import HermesLeakCheckIncompleteWarning, HermesLeakWarning, LeakError
from ..leaks.checker import LeakChecker, LeakReport
from ..leaks.probes import UNCHECKED, kernel_resources
from ..procs import read_stat, set_subreaper, start_time
from .fixtures import package_modules, put_back
from .report import stats_key, warn_at
from .settings import settings_key

_before_key = pytest.StashKey[dict[str, Any]]()


class LeakCheckPlugin:
    """Plugin object; see module docstring."""

    def __init__(self, mode: str, grace: float) -> None:
        self.mode = mode
        self.checker = LeakChecker(grace=grace)
        self._handoff: tuple[pytest.Item, dict[str, Any]] | None = None
        self._held: dict[Any, set[str]] = {}  # live wider-scoped fixture -> what its setup made
        self._holdings: dict[Any, Holding] = {}  # live wider-scoped fixture -> what its kernels are held by
        self._released: set[str] = set()  # what wider-scoped fixtures torn down since the last check made
        self._released_kernels: set[str] = set()  # the ids of their kernels still there then
        self._looking: tuple[pytest.Item, list[dict[str, Any]]] | None = None  # a last test, its looks so far
        self._interim: list[LeakReport] = []  # what its looks between wider fixtures' teardowns found
        self._interim_cut: BaseException | None = None  # what cut one of those looks short: raised by the check
        self._adoption = Adoption()

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Any:
        """What a wider-scoped fixture's setup makes is held by it, not leaked by the test; so are
        the kernels of the handles and registries it makes, whenever they start."""
        if fixturedef.scope == "function":
            return (yield)
        from ..kernel.holders import current_holder  # stdlib only: no kernel module loaded for it

        self._adoption.hush(fixturedef)
        holding = self._holdings[fixturedef] = Holding(fixturedef.argname, fixturedef.scope)
        before = _identities(self.checker.before())
        token = current_holder.set(holding)
        try:
            return (yield)
        finally:
            current_holder.reset(token)
            self._held[fixturedef] = _made_meanwhile(before, _identities(self.checker.before()),
                                                     set().union(*self._held.values()))
            # added after its own teardown: run first by it (and hushed until the post-finalizer below)
            fixturedef.addfinalizer(functools.partial(self._adoption.hush, fixturedef))
            self._adoption.resume(fixturedef)

    def pytest_fixture_post_finalizer(self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
        """Torn down: what it made, and its kernels, must be gone by the next check (they are compared again there).
        A transport its teardown closed is probed once more, at once, while the hosts of the wider
        fixtures not yet torn down stand (:meth:`_look_between`)."""
        self._adoption.resume(fixturedef)
        self._released |= self._held.pop(fixturedef, set())
        holding = self._holdings.pop(fixturedef, None)
        if holding is not None:
            handles = _held_handles({holding})
            self._released |= _kernel_identities(handles)
            self._released_kernels |= {h.kernel_id for h in handles}
        if self._looking is not None and fixturedef.scope != "function" and _closed_unprobed():
            self._look_between(*self._looking)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Any:
        try:
            return (yield)
        finally:  # a test that ended the run (pytest.exit, Ctrl-C) skipped the teardown hook's close
            self._adoption.close()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        self._adoption.open()  # (see Adoption)
        handoff, self._handoff = self._handoff, None
        # A clean check of the test just before ends where this test starts: its snapshots are
        # this test's "before" (no test code runs between the two; a leak found there, and the
        # cleanup that followed, means a fresh look instead). Halves the probes' cost per test.
        item.stash[_before_key] = handoff[1] if handoff is not None and handoff[0] is item else self.checker.before()
        return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: Any) -> Any:
        __tracebackhide__ = True  # the report is the message; this hook's source would only hide it
        looked = self._own_check_first(item) if _ends_wider_fixtures(item, nextitem) else []
        try:
            result = yield
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as failed:  # a fixture's teardown that raised (pytest.fail included)
            try:  # still checked: what it left would otherwise be in every later "before", never seen
                self._check(item, nextitem, since=looked[-1] if looked else None)
            finally:
                self._looking = None
                self._adoption.close()
                raise failed  # noqa: B012 - the teardown's own error stays the test's error
        self._looking = None
        try:
            self._check(item, nextitem, since=looked[-1] if looked else None)
        finally:
            self._adoption.close()
        return result

    def _look_between(self, item: pytest.Item, looked: list[dict[str, Any]]) -> None:
        """Compare now with the last look of the test whose teardown is ending wider fixtures, and
        keep what it found for that test's second look to report (a hook that raises here would
        leave the fixture's cached value behind). Run when a wider fixture's teardown closed a
        transport: its last probe would otherwise come after the fixtures that provide its host
        (a session's second docker engine or sshd container) had ended it: "not checked"."""
        with _capture_off(item.config):  # as in its first look
            report = self._compare(item, since=looked[-1])
        # kept for the test's check to raise (the next look clears the checker's): a pytest-timeout
        # alarm in this look's grace was lost, and the test passed with the leak as a warning
        self._interim_cut = self._interim_cut or self.checker.cut
        self.checker.cut = None
        if report is not None:
            looked.append(self.checker.last_seen)
            self._interim.append(report)

    def _own_check_first(self, item: pytest.Item) -> list[dict[str, Any]]:
        """Run the test's own check first among its parent's finalizers (added last, run first):
        after its function-scoped fixtures, before the wider ones, which may end the very host a
        transport it closed is probed on (a session's sshd or docker engine: the probe found it
        gone, and the last test of every worker got "not checked"). Returns a list that gets that
        check's last snapshots once it ran: the "before" of the second look, after the wider ones."""
        looked: list[dict[str, Any]] = []
        mine = package_modules()

        def own_check() -> None:
            __tracebackhide__ = True
            put_back(mine)  # a pytester test's teardown dropped them: the probes read the first copies
            seen_before = self.checker.last_seen
            try:
                with _capture_off(item.config):  # fds 1 and 2 as they were when "before" was taken
                    self._check(item, None)
            finally:
                self._adoption.close()  # the wider fixtures' teardowns follow: nothing of theirs is adopted
                if self.checker.last_seen is not seen_before:  # it compared (not an allowed or unset test)
                    looked.append(self.checker.last_seen)
                    self._looking = (item, looked)

        try:
            item.parent.addfinalizer(own_check)  # type: ignore[union-attr]
        except (AssertionError, KeyError):  # not set up (its setup stopped before pytest's): nothing wider to end
            pass
        return looked

    def _check(self, item: pytest.Item, nextitem: Any, since: dict[str, Any] | None = None) -> None:
        """Compare after ``item``'s fixture teardown; report, count and end what it left.

        :param since: the snapshots to compare with instead of the test's "before": those of the
            test's own check, when the wider fixtures its teardown ended are checked after it (what
            it could not look at, it said: not said again, and never as "before the test").
        :raises LeakError: if something leaked and the mode is ``error``.
        """
        __tracebackhide__ = True
        report = self._compare(item, since)
        interim, self._interim = self._interim, []
        cut, self.checker.cut = self._interim_cut or self.checker.cut, None  # pytest-timeout's Failed in a grace: raised last
        self._interim_cut = None
        try:
            if report is None:
                return
            clean = self.checker.last_clean
            if not report and not any(interim) and clean is not None and isinstance(nextitem, pytest.Item):
                self._handoff = (nextitem, clean)
            self._report(item, _merged([*interim, report]))
        finally:
            if cut is not None:
                raise cut

    def _compare(self, item: pytest.Item, since: dict[str, Any] | None = None) -> LeakReport | None:
        """What is new since the test's "before" (or ``since``); ``None`` if not checked at all."""
        released, self._released = self._released, set()  # this check's, whatever it does below
        released_kernels, self._released_kernels = self._released_kernels, set()
        before = item.stash.get(_before_key, None) if since is None else since
        if before is None:
            return None
        if item.get_closest_marker("hermes_allow_leaks") is not None:  # (one with no reason errored its setup)
            return None
        if released or released_kernels:  # in "before" while its fixture held it: a leak if it outlived that fixture
            before = {kind: {k: v for k, v in snap.items() if k not in released and not _names(k, v, released_kernels)}
                      for kind, snap in before.items()}
        held = _held_handles(set(self._holdings.values()))
        kept = [handle for nodeid, handle, _why in item.config.stash[stats_key].kept if nodeid == item.nodeid]
        ids, dirs = {h.kernel_id for h in [*held, *kept]}, _kernel_dirs(kept)
        return self.checker.after(before, exempt=_kept_resources(item) | set().union(*self._held.values())
                                  | _kernel_identities(held),
                                  exempt_if=(lambda key, what: _names(key, what, ids)
                                             or (key.startswith("kernel dir|") and key.endswith(dirs)))
                                  if ids else None,
                                  before_taken=None if since is not None else "before the test")

    def _report(self, item: pytest.Item, report: LeakReport) -> None:
        __tracebackhide__ = True
        stats = item.config.stash[stats_key]
        if report.unchecked and item.nodeid not in stats.unchecked:  # never a silent pass: say what it could not see
            stats.unchecked.append(item.nodeid)
        if report:  # counted and ended first: a warning below may raise (-W error)
            stats.leaks.update(report.counts())
            self.checker.cleanup(report)
            text = report.format(item.nodeid) + ("\n" + report.format_unchecked(item.nodeid) if report.unchecked else "")
            if self.mode == "error" or _contract_case(item):
                raise LeakError(text, leaks=report.counts())
            warn_at(item, HermesLeakWarning(text))
            if item.nodeid not in stats.warned:  # (not where -W error made the warning the test's error)
                stats.warned.append(item.nodeid)  # once: a test's second look (wider fixtures) warns again
            item.user_properties.append(("hermes_kernel.leak_warning", text))  # JUnit XML: the test case's own
        if report.unchecked and (blind := _own_transport_unchecked(item, report)):
            raise LeakError(f"{report.format_unchecked(item.nodeid)}\n  {blind}: the leak check looks through the "
                            f"backend under test, so a look it cannot make is the backend's defect (e.g. its execute "
                            f"cut or changed the scan's output)")
        if report.unchecked:
            warn_at(item, HermesLeakCheckIncompleteWarning(report.format_unchecked(item.nodeid)))


class Adoption:
    """When the test process is a child subreaper (``PR_SET_CHILD_SUBREAPER``, :func:`~..procs.set_subreaper`):
    from a test's setup to its own check, so a helper that detaches from it during the test (double
    fork, ``setsid``, an environment of its own, no kernel marker) stays its child, which the
    child-process probe reports and the check ends (it went to init, unseen); except while a
    fixture of a wider scope than the test is set up or torn down. What such a fixture starts
    detached may be shared on purpose (a session's daemon the other xdist workers use, the last
    one stops it): adopted, it was reported and killed by a later test's check (the clean-clone
    run of f7792ac killed the suite's second docker engine). Put back as it was after each test
    (an outer run's, for a pytester run in this process), whatever ended it (``pytest.exit``,
    Ctrl-C: no teardown hook ran, and the process stayed a subreaper)."""

    def __init__(self) -> None:
        self.was: bool | None = None  # before the test's window; None: no window open (or no prctl here)
        self.quiet: set[Any] = set()  # the wider-scoped fixtures being set up or torn down now

    def open(self) -> None:
        was = set_subreaper(not self.quiet)
        self.was = was if self.was is None else self.was

    def close(self) -> None:
        was, self.was = self.was, None
        if was is not None:
            set_subreaper(was)

    def hush(self, fixturedef: Any) -> None:
        if fixturedef not in self.quiet:
            self.quiet.add(fixturedef)
            if self.was is not None and len(self.quiet) == 1:
                set_subreaper(False)

    def resume(self, fixturedef: Any) -> None:
        if fixturedef in self.quiet:
            self.quiet.discard(fixturedef)
            if self.was is not None and not self.quiet:
                set_subreaper(True)


def _contract_case(item: pytest.Item) -> bool:
    """A case of the backend contract suite: what it leaks is the backend's defect, so it errors the
    case under ``warn`` too (a leaky backend passed the suite green, with warnings)."""
    module = getattr(getattr(item, "function", None), "__module__", None) or ""
    return module.startswith(f"{__name__.partition('.')[0]}.contract.")


def _own_transport_unchecked(item: pytest.Item, report: LeakReport) -> str | None:
    """In a contract case, the description of the case's own transport (its ``hermes_transport``)
    when the check could not look through it; ``None`` otherwise. A filecell backend that strips
    its output broke every scan and passed the suite green, with a warning in each case."""
    transport = (getattr(item, "funcargs", None) or {}).get("hermes_transport")
    if not _contract_case(item) or transport is None:
        return None
    try:
        own = transport.describe()
    except Exception:  # noqa: BLE001 - a describe() that raises is named by the transport's name
        own = getattr(transport, "name", "")
    return next((what for what in report.unchecked if own and what.startswith(own)), None)


def _merged(reports: list[LeakReport]) -> LeakReport:
    """One report of several looks at the same test (each found something new to the one before)."""
    if len(reports) == 1:
        return reports[0]
    leaks: dict[str, dict[str, str]] = {}
    for report in reports:
        for kind, items in report.leaks.items():
            leaks.setdefault(kind, {}).update(items)
    return LeakReport(leaks, {k: v for report in reports for k, v in report.unchecked.items()})


def _closed_unprobed() -> bool:
    """Whether a closed transport waits for its last probe (no transport module loaded: none)."""
    transports = sys.modules.get("pytest_hermes_kernel.transports")
    return transports is not None and transports.closed_unprobed()


def _ends_wider_fixtures(item: pytest.Item, nextitem: Any) -> bool:
    """Whether ``item``'s teardown also ends its parent (and so the fixtures of the parent's
    scope and maybe wider): pytest tears down every node the next item does not share."""
    return item.parent is not None and (not isinstance(nextitem, pytest.Item)
                                        or item.parent not in nextitem.listchain())


@contextlib.contextmanager
def _capture_off(config: pytest.Config) -> Iterator[None]:
    """pytest's output capture suspended (inside a teardown it points fds 1 and 2 at its temp
    files: read as two leaked fds)."""
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is None:
        yield
        return
    with capman.global_and_fixture_disabled():
        yield


class Holding:
    """One setup of a wider-scoped fixture: the holder (:mod:`~pytest_hermes_kernel.kernel.holders`)
    of the kernels made during it, until pytest tears it down."""

    def __init__(self, name: str, scope: str) -> None:
        self.name, self.scope = name, scope

    def __repr__(self) -> str:
        return f"<{self.scope}-scoped fixture {self.name!r}>"


def _held_handles(holdings: Collection[Holding]) -> list[Any]:
    """The kernels held by these fixture setups that are not shut down."""
    holders = sys.modules.get("pytest_hermes_kernel.kernel.holders")  # not loaded: no kernel was ever made
    if holders is None or not holdings:
        return []
    return [h for h in holders.held_handles() if h.holder in holdings and not h.stopping]


def _kernel_identities(handles: Collection[Any], records: Collection[Any] = ()) -> set[str]:
    """Identities of these kernels' processes (and their children) and kernel dirs on this host:
    of live ``handles`` and of kept-kernel ``records`` (:class:`~..containers.kept.KeptKernel`).
    A handle without a launch here (a harness kernel's is in its host process) adds its id only."""
    if not handles and not records:
        return set()
    kdirs = [h.launched.kernel_dir for h in handles if h.launched is not None]
    kdirs += [r.locator.get("kernel_dir") for r in records]
    ids = {h.kernel_id for h in handles} | {r.kernel_id for r in records}
    return kernel_resources(ids) | {f"dir:{os.path.basename(d)}" for d in kdirs if d}


def _kernel_dirs(handles: Collection[Any]) -> tuple[str, ...]:
    """``:<kernel dir>`` of each handle with one: how a transport's own probe ends the identity of
    a kernel dir it lists (a filecell backend's: ``filecell:<backend>:<path>``)."""
    return tuple(f":{h.launched.kernel_dir}" for h in handles if h.launched is not None and h.launched.kernel_dir)


def _names(key: str, description: str, kernel_ids: Collection[str]) -> bool:
    """Whether a probe's finding is one of these kernels' (by id, so wherever it runs): a
    registry entry (``entry:<id>``), a remote process (``...:<id>``) or kernel dir (``.../<id>``),
    or an ssh relay channel to ``<kernel dir>/sock``."""
    last = key.rpartition("|")[2]
    return any(last.endswith((f":{kid}", f"/{kid}")) or f"/{kid}/sock" in description for kid in kernel_ids)


def _made_meanwhile(before: set[str], now: set[str], held: set[str]) -> set[str]:
    """What is in ``now`` and not in ``before``, less a process that one there before, and not
    ``held`` by a wider fixture, forked meanwhile (or a process below it): a helper the test's
    function fixture left running whose child came while a wider fixture was set up is the test's,
    not that fixture's. Held, that child was not reported with the helper and outlived the check
    that ended the helper, unseen. A child of a server a wider fixture holds (a session's
    ``multiprocessing`` forkserver) is the fixture's: the check had killed it after the first test."""
    me, unheld = os.getpid(), before - held
    return {key for key in now - before if not (key.partition(":")[0].isdigit()
                                                and _below_one_of(int(key.partition(":")[0]), unheld, me))}


def _below_one_of(pid: int, identities: set[str], me: int) -> bool:
    """Whether a process between ``pid`` and this process (``me``) has one of these identities."""
    for _ in range(64):  # (a pid's ancestry is short; a cycle read across pid reuse must not spin)
        fields = read_stat(pid)
        if fields is None or int(fields[1]) in (me, 0, 1):
            return False
        pid = int(fields[1])
        if f"{pid}:{start_time(pid)}" in identities:
            return True
    return False


def _identities(snapshots: dict[str, Any]) -> set[str]:
    """Every identity the probes' snapshots name (parts not looked at left out)."""
    return {key for snap in snapshots.values() for key in snap if not key.startswith(UNCHECKED)}


def _kept_resources(item: pytest.Item) -> set[str]:
    """Identities of what the kernels kept for post-mortem (``--hermes-keep-failed``) hold: not leaks."""
    stats = item.config.stash[stats_key]
    kept = [handle for nodeid, handle, _why in stats.kept if nodeid == item.nodeid]
    past = [record for nodeid, record in stats.kept_past if nodeid == item.nodeid]
    return _kernel_identities(kept, past)


def pytest_configure(config: pytest.Config) -> None:
    settings = config.stash[settings_key]
    if settings.leak_check != "off":
        config.pluginmanager.register(LeakCheckPlugin(settings.leak_check, settings.leak_grace or 0.0),
                                      "hermes-leak-checker")
