"""Report header, per-test outcome tracking and the end-of-run kernel summary (xdist-aware).

Under pytest-xdist each worker keeps its own counts and sends them to the controller in
``config.workeroutput`` when it finishes; the controller adds them up before printing. A worker
also sends its counts so far with each test's teardown report: one that crashes never finishes,
and its counts up to its last test still reach the summary.
"""

from __future__ import annotations

import linecache
import os
import re
import threading
import warnings
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import HermesKernelError
from ..kernel import census  # stdlib only: no kernel module is loaded for it
from .settings import settings_key

if TYPE_CHECKING:
    from ..containers.kept import KeptKernel
    from ..kernel.interface import Kernel

phase_report_key = pytest.StashKey[dict[str, pytest.TestReport]]()
#: On the xdist controller: each worker's counts as its last teardown report carried them.
_sent_key = pytest.StashKey[dict[str, dict[str, Any]]]()
#: A ``def`` line (pytest's location of a decorated test is its first decorator's line).
_DEF = re.compile(r"\s*(async\s+)?def\s")
#: How many lines below its location a test's ``def`` line is looked for (its decorators).
_DECORATOR_LINES = 40


def warn_at(item: pytest.Item, warning: Warning) -> None:
    """Warn ``warning`` at the test's own ``def`` line: pytest's summary shows that file, line and
    its source, where a plain ``warn`` showed the kit's line (a fresh user read it as the kit's
    fault), and ``item.location`` alone a decorated test's first decorator (a fresh user, 2026-12-07).
    A repeat of the same warning at the same line is shown once, as ``warnings.warn``'s."""
    __tracebackhide__ = True  # under filterwarnings error it raises: the error is the test's, not this frame's
    path, line, _ = item.location
    filename, lineno = str(item.config.rootpath / path), (line or 0) + 1
    if filename.endswith(".py"):  # (a scenario's location is a line of its TOML file)
        for below in range(_DECORATOR_LINES):
            text = linecache.getline(filename, lineno + below)
            if not text or _DEF.match(text):
                lineno += below if text else 0
                break
    module = getattr(getattr(item, "module", None), "__name__", None)
    warnings.warn_explicit(warning, type(warning), filename, lineno, module=module,
                           registry=globals().setdefault("__warningregistry__", {}))


class KernelStats:
    """Counts of a run: kernels started, peak alive, deaths by reason, leaks, incomplete leak
    checks, kept kernels.

    Kernels started and alive are every kernel this process started during the session, told by
    the kernel census (:mod:`~pytest_hermes_kernel.kernel.census`: the fixtures' kernels and a
    test's own ``start_kernel()`` or ``KernelRegistry`` alike), and the fixtures' kernels told by
    their listeners (a host-harness kernel runs in a process of its own); one kernel id counts
    once. Deaths are those the fixtures' and ``hermes_registry``'s listeners see.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = 0
        self.alive = 0
        self.peak_alive = 0
        self.deaths: Counter[str] = Counter()
        self.leaks: Counter[str] = Counter()
        self.unchecked: list[str] = []  # node ids of tests whose leak check could not look at everything
        self.warned: list[str] = []  # node ids of tests whose leaks were warnings only (--hermes-leak-check=warn)
        self.unconfirmed: list[str] = []  # kernel ids whose shutdown was not confirmed (may still run)
        self.kept: list[tuple[str, Kernel, str]] = []  # until the session ends (they cannot outlive it)
        self.kept_past: list[tuple[str, KeptKernel]] = []  # outlive the session (--hermes-keep-failed)
        self._kept_past_text: list[str] = []
        self.kept_elsewhere: list[str] = []  # lines from pytest-xdist workers (handles stay there)
        self._counted: set[str] = set()  # kernel ids counted as started and not yet shut down
        self.overrides: dict[str, str] = {}  # a hermes_transport override's place -> its transport's name
        self.contract_plain: set[str] = set()  # transports contract cases ran on with no override
        self.unavailable: dict[str, list[Any]] = {}  # a leg that could not run here -> [tests skipped, first reason]

    def on_event(self, event: str, handle: Kernel, payload: Any) -> None:
        """A fixture kernel's listener (:data:`~pytest_hermes_kernel.kernel.interface.KernelListener`)."""
        with self._lock:
            if event == "started":
                self._started(handle.kernel_id)
            elif event == "shutdown":
                self._ended(handle.kernel_id)
                if payload.may_still_run:
                    self.unconfirmed.append(handle.kernel_id)
            elif event == "lost":  # once per loss, whoever caused it (faults, harness hosts included)
                self.deaths[payload.reason] += 1

    def on_census(self, event: str, kernel_id: str) -> None:
        """The kernel census's observer: any kernel of this process started or ended."""
        with self._lock:
            if event == "started":
                self._started(kernel_id)
            elif event == "ended":
                self._ended(kernel_id)

    def _started(self, kernel_id: str) -> None:
        if kernel_id not in self._counted:
            self._counted.add(kernel_id)
            self.started += 1
            self.alive += 1
            self.peak_alive = max(self.peak_alive, self.alive)

    def _ended(self, kernel_id: str) -> None:
        if kernel_id in self._counted:
            self._counted.discard(kernel_id)
            self.alive = max(0, self.alive - 1)

    def skipped_leg(self, name: str, why: str, n: int = 1) -> None:
        with self._lock:
            self.unavailable.setdefault(name, [0, why])[0] += n

    def keep(self, nodeid: str, handle: Kernel, why: str) -> None:
        with self._lock:
            self.kept.append((nodeid, handle, why))

    def keep_past(self, nodeid: str, record: KeptKernel | None, text: str) -> None:
        """A kernel of ``nodeid`` kept past the session (``record``; ``None``: keeping it failed)."""
        with self._lock:
            if record is not None:
                self.kept_past.append((nodeid, record))
            self._kept_past_text.append(text)

    def kept_lines(self) -> list[str]:
        """One entry per kernel kept for post-mortem, as the terminal summary prints it."""
        with self._lock:
            return [f"kept for post-mortem: {nodeid}: kernel {h.kernel_id} worker pid {h.pid} runner pid "
                    f"{h.runner_pid} (shut down at session end: it cannot outlive it: {why})"
                    for nodeid, h, why in self.kept] + self._kept_past_text + self.kept_elsewhere

    def as_dict(self) -> dict[str, Any]:
        return {"started": self.started, "peak_alive": self.peak_alive, "deaths": dict(self.deaths),
                "leaks": dict(self.leaks), "unchecked": list(self.unchecked), "warned": list(self.warned),
                "kept": self.kept_lines(),
                "unconfirmed": list(self.unconfirmed), "overrides": dict(self.overrides),
                "contract_plain": sorted(self.contract_plain), "unavailable": dict(self.unavailable)}

    def merge(self, data: dict[str, Any]) -> None:
        with self._lock:
            self.started += data.get("started", 0)
            self.peak_alive += data.get("peak_alive", 0)  # workers run at once: peaks add up
            self.deaths.update(data.get("deaths", {}))
            self.leaks.update(data.get("leaks", {}))
            self.unchecked.extend(data.get("unchecked", []))
            self.warned.extend(data.get("warned", []))
            self.unconfirmed.extend(data.get("unconfirmed", []))
            self.kept_elsewhere.extend(data.get("kept", []))
            self.overrides.update(data.get("overrides", {}))
            self.contract_plain.update(data.get("contract_plain", []))
        for name, (n, why) in data.get("unavailable", {}).items():
            self.skipped_leg(name, why, n)


stats_key = pytest.StashKey[KernelStats]()
_outer_key = pytest.StashKey[list[Any]]()  # the shared transports a run inside a run found open: the outer run's
_runs: list[pytest.Config] = []  # this process's runs, outermost first (pytester's in-process runpytest nests one)


def pytest_configure(config: pytest.Config) -> None:
    stats = config.stash[stats_key] = KernelStats()
    census.observe(stats.on_census)
    if _runs:  # its end closed them, and the outer run's kernels on them died "transport_lost"
        from ..transports import shared_transports

        config.stash[_outer_key] = [shared.transport for shared in shared_transports().values()]
    _runs.append(config)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    rep = yield
    item.stash.setdefault(phase_report_key, {})[rep.when] = rep
    if rep.skipped and rep.when == "setup" and call.excinfo is not None:
        _note_skipped_leg(item, call.excinfo.value)
    if rep.when == "teardown" and hasattr(item.config, "workeroutput"):  # see the module docstring
        rep.hermes_stats = item.config.stash[stats_key].as_dict()  # type: ignore[attr-defined]
    return rep


def _note_skipped_leg(item: pytest.Item, exc: BaseException) -> None:
    """Count a test skipped because its leg's transport cannot run here (the fixture's or the
    scenario's skip, raised while handling ``TransportUnavailableError``): the summary names the leg
    (a one-leg CI job whose tests all skipped ended green, ``3 skipped``, with no hermes-kernel line)."""
    from ..errors import TransportUnavailableError

    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if not isinstance(exc.__context__, TransportUnavailableError) or tb is None \
            or os.path.dirname(tb.tb_frame.f_code.co_filename) != os.path.dirname(__file__):
        return  # not the kit's skip of a leg (a test's own fixture that skips on a transport it made is no leg)
    params = getattr(getattr(item, "callspec", None), "params", {})
    name = params.get("hermes_transport") or getattr(item, "transport_name", None)
    if isinstance(name, str):
        item.config.stash[stats_key].skipped_leg(name, str(exc.__context__))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """On the xdist controller: keep the counts a worker's report carried (xdist names the worker)."""
    data, node = getattr(report, "hermes_stats", None), getattr(report, "node", None)
    if isinstance(data, dict) and node is not None:
        node.config.stash.setdefault(_sent_key, {})[node.gateway.id] = data


def pytest_report_header(config: pytest.Config) -> list[str]:
    s = config.stash[settings_key]
    timeout = "none" if s.timeout is None else f"{s.timeout:g} s"
    lines = [f"hermes-kernel: transports={','.join(s.transport)} cell-timeout={timeout} "
             f"leak-check={s.leak_check} max-kernels={s.max_kernels}"
             + (" keep-failed" if s.keep_failed else "")
             + (" require-transports" if s.require_transports else "")]  # a CI log shows the strict mode was on
    if s.env_not_used:  # a CI job's PYTEST_HERMES_TRANSPORT=docker lost, unseen, to the ini's addopts
        lines.append(f"hermes-kernel: {_env_not_used(s.env_not_used)}")
    return lines


def _env_not_used(names: tuple[str, ...]) -> str:
    return (f"not used: {', '.join(names)}: the command line's option wins over the environment (an option in "
            "the ini's addopts or in PYTEST_ADDOPTS is on the command line)")


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    stats = config.stash[stats_key]
    if hasattr(config, "workeroutput"):
        config.workeroutput["hermes_stats"] = stats.as_dict()
        # xdist stops a worker soon after this hook (SIGINT after 5 s): release shared
        # containers now, not in pytest_unconfigure, or the run's last user never removes them
        _finish_session(config, stats)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    if getattr(node, "hermes_stats_merged", False):  # xdist reports an interrupted worker down twice
        return
    node.hermes_stats_merged = True
    sent = node.config.stash.get(_sent_key, {}).pop(node.gateway.id, None)
    data = getattr(node, "workeroutput", {}).get("hermes_stats") or sent  # a crashed worker sent no final counts
    if data:
        node.config.stash[stats_key].merge(data)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workeroutput"):
        return
    stats = config.stash[stats_key]
    sent = config.stash.get(_sent_key, {})
    for worker in list(sent):  # a worker whose end an interrupted controller never saw: its last report's
        stats.merge(sent.pop(worker))  # counts (its kept kernels were not listed, though they ran on for the TTL)
    kept = stats.kept_lines()
    if kept:
        kept = as_of_now(kept)
    unused = config.stash[settings_key].env_not_used  # (-q shows no header: said again here)
    if not stats.started and not stats.leaks and not stats.unchecked and not kept and not stats.unavailable \
            and not unused:
        return
    tr = terminalreporter
    tr.ensure_newline()  # before the section, not between it and its first line (-v leaves a test line open)
    tr.section("hermes-kernel summary")
    deaths = ", ".join(f"{r}={n}" for r, n in sorted(stats.deaths.items())) or "none"
    tr.write_line(f"kernels started: {stats.started}; peak alive: {stats.peak_alive}; "
                  f"deaths and resets by reason: {deaths}")
    if unused:
        tr.write_line(_env_not_used(unused))
    for where, name in sorted(stats.overrides.items()):  # the header's transports= is not what these tests ran on
        tr.write_line(f"hermes_transport overridden by {where}: its tests ran on the {name} transport")
    if stats.contract_plain:  # a backend author's conftest that was not picked up: the suite ran on a built-in
        names = sorted(stats.contract_plain)
        lead = "the other contract cases" if stats.overrides else "contract suite"  # (a run with both: which is which)
        tr.write_line(f"{lead} ran on the built-in {', '.join(names)} transport{'s' if len(names) > 1 else ''} "
                      "(--hermes-transport), with no hermes_transport override: a backend of your own runs it "
                      "through a hermes_transport fixture in a conftest.py beside or above the test file")
    for name, (n, why) in sorted(stats.unavailable.items()):
        tr.write_line(f"the {name} leg did not run here: {n} test{'s' if n > 1 else ''} skipped ({why}); "
                      "--hermes-require-transports makes them fail instead (a CI job that must run it)")
    if stats.leaks:
        tr.write_line("leaks found: " + ", ".join(f"{k}={n}" for k, n in sorted(stats.leaks.items())))
    if stats.warned:  # the run's exit status does not show them: say where they are and what fails on them
        n = len(stats.warned)
        tr.write_line(f"leaks only warned of: {n} test{'s' if n > 1 else ''} ({_first_three(stats.warned)}): see "
                      "HermesLeakWarning above; --hermes-leak-check=error makes each its test's error")
    if stats.unchecked:
        tr.write_line(f"leak checks incomplete: {len(stats.unchecked)} tests ({_first_three(stats.unchecked)}): a part "
                      "could not be looked at; see HermesLeakCheckIncompleteWarning")
    if stats.unconfirmed:
        n, shown = len(stats.unconfirmed), _first_three([k[:8] for k in stats.unconfirmed])
        tr.write_line(f"shutdowns not confirmed: {n} kernel{'s' if n > 1 else ''} ({shown}): not seen gone (a paused "
                      "or unreachable host): may still run until the orphan timer ends it")
    for entry in kept:
        for line in entry.splitlines():
            tr.write_line(line)


def _first_three(items: list[str]) -> str:
    """``a, b, c and N more``: the summary's way of naming a list."""
    return ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    stats = config.stash.get(stats_key, None)
    if stats is None:
        return
    _finish_session(config, stats)
    census.unobserve(stats.on_census)
    if config in _runs:
        _runs.remove(config)


def _finish_session(config: pytest.Config, stats: KernelStats) -> None:
    """Shut down the kernels kept for post-mortem, then close the shared transports (but an
    outer run's, in a run inside it)."""
    kept, stats.kept = list(stats.kept), []
    for _nodeid, handle, _why in kept:
        handle.shutdown()
    from ..transports import close_shared_transports

    close_shared_transports(keep=config.stash.get(_outer_key, []))


_KEPT_LINE = re.compile(r"(kept for post-mortem: .*?: kernel ([0-9a-f]{32}) on [^\n]*?\)); it ends by itself [^\n]*")


def as_of_now(entries: list[str]) -> list[str]:
    """The summary's kept-kernel entries, each as it stands at the run's end: one whose TTL ran out
    while the rest of the run went on (no client came) has ended, and says so instead of listing
    the commands that would reach it (they printed ``exec``, which then said ``expired``)."""
    from ..containers.kept import in_use_by, load_all

    if not any(_KEPT_LINE.match(entry) for entry in entries):
        return entries
    try:
        records = {r.kernel_id: r for r in load_all() if r.expired() and not in_use_by(r.kernel_id)}
    except (HermesKernelError, OSError):  # the records cannot be read now: the entries as they were made
        return entries
    now = []
    for entry in entries:
        match = _KEPT_LINE.match(entry)
        record = records.get(match.group(2)) if match else None
        if record is not None:
            entry = (f"{match.group(1)}; it has ended already: {record.gone_words().rstrip('; ')}, before the run "
                     "ended (`hermes-kernel sweep` removes its record; a longer --hermes-keep-failed-ttl keeps it)")
        now.append(entry)
    return now
