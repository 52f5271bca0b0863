"""The kernel's story in a failing test's report: transport, pids, deaths, last cells, log tails.

For every kernel a test got from ``hermes_kernel``/``hermes_kernel_factory`` the plugin follows
the kernel's events. When the test fails (in any phase), its report gets one section per kernel,
``hermes-kernel: kernel <id>``: transport, where it runs (its launch's label: a docker kernel's
container and engine), kernel id, pids, generation, every loss or reset with
its reason, the last cells' statuses (or the error a cell raised instead), and the tails of the runner's log and of the host's log
(the kernel host container's or the sshd container's, :meth:`Transport.host_log`). Each tail is
bounded (:data:`LOG_LINES` lines, :data:`SECTION_CHARS` characters a section) and redacted like
cell output (:func:`~pytest_hermes_kernel.kernel.output.redact`, with the host's and the kernel
env's secret values). The same facts go to ``item.user_properties`` as ``hermes_kernel.<n>.<fact>``, which
the JUnit XML writer puts in the test case's ``<properties>``. A passing test gets the section
only when ``-rA``/``-rP`` asks (what pytest prints a passing test's sections for; ``-v`` alone
prints none), and no properties.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..kernel.interface import Kernel

#: Cells remembered per kernel (the newest).
LAST_CELLS = 5
#: Lines of each log tail.
LOG_LINES = 20
#: Characters a section may hold; the rest is cut with a note.
SECTION_CHARS = 8000


@dataclass
class KernelStory:
    """What happened to one kernel during a test, as its report section tells it."""

    kernel: Kernel
    generations: list[str] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)
    cells: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=LAST_CELLS))
    count: int = 0
    seen_generation: int = -1
    last_launch: Any = None  # the kernel's last launch record (a shut-down kernel has none any more)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._generation_seen()

    def on_event(self, event: str, kernel: Any, payload: Any) -> None:
        """The kernel's listener (see :data:`~pytest_hermes_kernel.kernel.interface.KernelListener`)."""
        with self.lock:
            if event == "started":
                self._generation_seen()
            elif event == "lost":
                self.losses.append(f"{payload.reason}: {payload.note or 'no note'}"
                                   + _exit_bits(payload.exit_code, payload.signal))
            elif event == "result":
                if payload.kernel.generation != self.seen_generation:  # a restart brings no "started"
                    self._generation_seen()
                self.count += 1
                self.cells.append(f"cell {self.count} (generation {payload.kernel.generation}): {payload.summary()}")
            elif event == "raised":  # a cell that got no result: the host gone during it, say
                from ..kernel.output import error_text

                self.count += 1
                self.cells.append(f"cell {self.count} (generation {kernel.generation}): raised {error_text(payload)}")
            elif event == "shutdown":
                self.losses.append(f"shutdown: ended by step {payload.step}" + (f" ({payload.note})" if payload.note else "")
                                   + ("" if payload.confirmed else ", not confirmed gone")
                                   + _exit_bits(payload.exit_code, payload.signal))

    def _generation_seen(self) -> None:
        k = self.kernel
        self.seen_generation = k.generation
        self.last_launch = getattr(k, "launched", None) or self.last_launch
        self.generations.append(f"generation {k.generation}: worker pid {k.pid}, runner pid {k.runner_pid}")

    def facts(self) -> dict[str, str]:
        """The story as flat facts (the JUnit properties), redacted."""
        k = self.kernel
        with self.lock:
            where = _where(k.launched, self.last_launch, k)
            facts = {"transport": k.transport.name, "where": where, "kernel_id": k.kernel_id, "generation": str(k.generation),
                     "pids": "; ".join(self.generations), "losses": "; ".join(self.losses) or "none",
                     "last_cells": " | ".join(self.last_cells()) or "none"}
            if _fired(k):
                facts["faults"] = "; ".join(_fired(k))
        return {name: self._clean(value) for name, value in facts.items()}

    def last_cells(self) -> list[str]:
        """(Under :attr:`lock`.) The last cells' lines, and a cell still in flight as the report is made: an ``aexecute``'s
        when pytest-timeout cut the test (its thread runs on): it was missing."""
        k = self.kernel
        running = getattr(getattr(k, "state", None), "name", None) in ("BUSY", "RESETTING")
        return list(self.cells) + [f"cell {self.count + 1} (generation {k.generation}): still running when this "
                                   "report was made"] * running

    def section(self) -> str:
        """The report section's text: facts, then the log tails; bounded and redacted."""
        facts = self.facts()
        with self.lock:
            cells = self.last_cells()
        lines = [f"transport: {facts['transport']}", f"where: {facts['where']}", f"kernel id: {facts['kernel_id']}",
                 f"generation now: {facts['generation']}", "pids:", *_indent(self.generations),
                 "deaths and resets:", *_indent(self.losses or ["none"]),
                 f"last {LAST_CELLS} cells:", *_indent(cells or ["none"])]
        fired = _fired(self.kernel)
        if fired:  # a fault marker's drop left no death or reset: the story did not say it had fired
            lines += ["faults fired:", *_indent(fired)]
        for title, text in self._tails():
            lines += [f"{title} (last {LOG_LINES} lines):", *_indent(text.splitlines() or ["(empty)"])]
        text = self._clean("\n".join(lines))
        if len(text) > SECTION_CHARS:
            text = text[:SECTION_CHARS] + f"\n[... {len(text) - SECTION_CHARS} characters cut ...]"
        return text

    def _tails(self) -> list[tuple[str, str]]:
        launched, transport = self.kernel.launched, self.kernel.transport
        if launched is None and self.last_launch is not None:  # its kernel dir went with the shutdown
            return [("runner log", "(none: the kernel was shut down before this report, its kernel dir with it)")]
        if launched is None:
            return [("runner log", "(not read: the launch record is in the harness host process)"
                     if hasattr(self.kernel, "kill_host") else _no_launch(self.kernel))]
        tails = []
        for title, read in (("runner log", transport.runner_log), ("host log", transport.host_log)):
            try:
                tails.append((title, read(launched, LOG_LINES)))
            except Exception as exc:  # noqa: BLE001 - a report must never fail for its story
                tails.append((title, f"(could not be read: {exc})"))
        return [(title, text) for title, text in tails if text or title == "runner log"]

    def _clean(self, text: str) -> str:
        """``text`` redacted, a lone surrogate (a cell's value or error can hold one) as its escape
        (``\\ud800``): pytest wrote a section it could not encode escaped whole, on one line."""
        from ..kernel.output import kernel_secrets, redact

        text = redact(text, kernel_secrets(self.kernel.options.env))  # the host's too: a backend's repr held them
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _exit_bits(exit_code: int | None, signal: int | None) -> str:
    bits = ([f"exit code {exit_code}"] if exit_code is not None else []) + ([f"signal {signal}"] if signal else [])
    return f" ({', '.join(bits)})" if bits else ""


def _fired(kernel: Any) -> list[str]:
    """The faults a fault marker's kernel (``FaultingKernel.fired``) fired, one line each."""
    lines = []
    for f in list(getattr(kernel, "fired", None) or ()):
        spec = f.spec
        mode = f"(mode={spec.mode!r})" if spec.kind == "transport_drop" else ""
        when = (f"during cell {spec.during_cell}, {spec.delay:g} s after it started" if spec.during_cell is not None
                else f"after cell {spec.after_cell}" if spec.after_cell is not None else f"when the test fired it (cell {f.cell})")
        lines.append(f"{spec.kind}{mode} {when}")
    return lines


def _indent(lines: list[str]) -> list[str]:
    return [f"  {line}" for line in lines]


stories_key = pytest.StashKey[list[KernelStory]]()


def follow(item: pytest.Item, kernel: Kernel) -> KernelStory:
    """Tell ``kernel``'s story in ``item``'s report if the test fails; the story (it hears the
    kernel's events from now on)."""
    story = KernelStory(kernel)
    kernel.add_listener(story.on_event)
    item.stash.setdefault(stories_key, []).append(story)
    return story


def _wanted(item: pytest.Item, report: pytest.TestReport) -> bool:
    if report.failed:
        return True
    config = item.config
    asked = bool({"A", "P"} & set(getattr(config.option, "reportchars", "") or ""))
    return report.when == "call" and asked


_told_key = pytest.StashKey[bool]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Each run of a test tells its own kernels' story. pytest-rerunfailures (``--reruns``) runs
    the same item again: the first attempt's stories, its told flag and its JUnit properties
    stayed on the item, so the final failure's report had no section and its XML named the
    first attempt's kernel."""
    item.stash[stories_key] = []
    item.stash[_told_key] = False
    item.user_properties[:] = [p for p in item.user_properties
                               if not (isinstance(p, tuple) and str(p[0]).startswith("hermes_kernel."))]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    stories = item.stash.get(stories_key, [])
    if stories and not item.stash.get(_told_key, False) and _wanted(item, report):
        item.stash[_told_key] = report.failed  # a failure's story is told once, in its first failed phase
        for n, story in enumerate(stories):
            report.sections.append((f"hermes-kernel: kernel {story.kernel.kernel_id}", story.section()))
            if report.failed:  # JUnit XML takes the teardown report's, copied from the item's
                target = report.user_properties if report.when == "teardown" else item.user_properties
                target.extend((f"hermes_kernel.{n}.{name}", value) for name, value in story.facts().items())
    return report


def _where(launched: Any, last_launch: Any, kernel: Any) -> str:
    """Where the kernel runs (its launch's label), or ran when it was shut down before the report."""
    if launched is not None:
        return launched.label
    return f"{last_launch.label} (shut down)" if last_launch is not None else _no_launch(kernel)


def _no_launch(kernel: Any) -> str:
    """Why a kernel has no launch record here: a harness kernel's is in its host process (the
    one a ``hermes_host_sigkill`` test SIGKILLs: its launch's label, as that process had it, so
    that a docker kernel's pids read as the container's); any other kernel did not start."""
    if hasattr(kernel, "kill_host"):
        label = (getattr(kernel, "facts", None) or {}).get("label")
        host = f"the harness host process, pid {getattr(kernel, 'host_pid', '?')}"
        return f"{label} (launched by {host})" if label else f"(launched by {host})"
    return "(none: the kernel did not start)"
