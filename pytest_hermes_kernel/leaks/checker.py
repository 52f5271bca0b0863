"""Compare probe snapshots taken before a test and after its fixture teardown."""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from ..kernel import census
from .probes import PROBES, UNCHECKED, Probe, Snapshot

#: The kernel id in a process's description (``pid N (kernel K): command``, :func:`.probes._describe`;
#: remote ones: ``pid N in container C (kernel K): command``).
_KERNEL_OF = re.compile(r"\(kernel ([^)\s]+)\)")


@dataclass
class LeakReport:
    """What outlived a test: ``{kind: {identity: description}}``, and what could not be looked at.

    ``unchecked``: ``{what: why}`` for each part of the check that saw nothing because it could not
    look (a probe that raised, a transport whose host did not answer): a leak there went unseen.
    It does not make the report true (that is :attr:`leaks` only).
    """

    leaks: dict[str, Snapshot] = field(default_factory=dict)
    unchecked: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.leaks.values())

    def counts(self) -> dict[str, int]:
        return {kind: len(items) for kind, items in self.leaks.items() if items}

    def format(self, nodeid: str) -> str:
        """The report: one line per kernel whose processes outlived the test (its processes show
        the kernel server's command line, which read as if the server had leaked), one per leak."""
        from ..transports.runner_zipapp import NAME_PREFIX  # in the command line of a kernel's runner and worker

        lines = [f"{nodeid}: resources outlived the test (after fixture teardown):"]
        kernels = sorted({kid for kind, items in self.leaks.items() if "process" in kind for desc in items.values()
                          if NAME_PREFIX in desc for kid in _KERNEL_OF.findall(desc)
                          if kid != "?" and not census.ended(kid)})  # (a shut-down kernel's cell forked it)
        lines += [f"  kernel {kid} still runs (its runner or worker outlived the test): shut it down (call "
                  "shutdown(), or start it with `with start_kernel(...)` or a hermes_* fixture)" for kid in kernels]
        for kind, items in sorted(self.leaks.items()):
            for desc in sorted(items.values()):
                lines.append(f"  leaked {kind}: {desc}")
        lines.append("Hint: shut kernels down (use the hermes_* fixtures or `with start_kernel(...)`), "
                     "wait for subprocesses, join threads; hold a kernel or registry that several tests "
                     "share in a module- or session-scoped fixture that closes it; mark intended leftovers with "
                     "@pytest.mark.hermes_allow_leaks(reason).")
        return "\n".join(lines)

    def format_unchecked(self, nodeid: str) -> str:
        lines = [f"{nodeid}: the leak check could not look at everything; a leak there went unseen:"]
        lines += [f"  not checked: {what}: {why}" for what, why in sorted(self.unchecked.items())]
        return "\n".join(lines)


class LeakChecker:
    """Snapshot before, diff after, with a short retry so that reaping can finish.

    :param grace: seconds to keep re-checking while something still looks leaked.
    """

    def __init__(self, probes: Sequence[Probe] | None = None, grace: float = 3.0) -> None:
        self.probes = list(PROBES if probes is None else probes)
        self.grace = grace
        self.last_clean: dict[str, Snapshot] | None = None
        """The snapshots of the last :meth:`after` that found nothing (``None`` after a leak):
        what is there now, so the next test's :meth:`before` may start from it."""
        self.last_seen: dict[str, Snapshot] = {}
        """The snapshots of the last :meth:`after`, whatever it found: the "before" of a check
        that follows on at once (the last test's second look, after the wider fixtures' teardown)."""
        self.cut: BaseException | None = None
        """What cut the last :meth:`after`'s re-checks short (pytest-timeout's ``Failed``), for its
        caller to raise once it has reported and ended what that check found."""

    def before(self) -> dict[str, Snapshot]:
        return {p.kind: self._safe(p) for p in self.probes}

    def after(self, before: dict[str, Snapshot], exempt: Collection[str] = (),
              exempt_if: Callable[[str, str], bool] | None = None,
              before_taken: str | None = "before the test") -> LeakReport:
        """What is new since ``before``; retried for up to ``grace`` seconds while anything is.

        :param exempt: identities that are not leaks (e.g. a kernel kept for post-mortem).
        :param exempt_if: ``(identity, description) -> bool``: also not leaks where true (e.g.
            what names a held kernel's id, wherever a probe found it).
        :param before_taken: when ``before`` was taken, named in the report beside each part it
            could not look at; ``None`` leaves those out (a look that said so already: the last
            test's first look, whose snapshots are its second look's ``before``).
        """
        deadline, self.cut, collected = time.monotonic() + self.grace, None, False
        while True:
            try:
                report, now = self._diff(before, set(exempt), exempt_if, before_taken)
                self.last_clean = None if report or report.unchecked else now
                self.last_seen = now
                if not report or time.monotonic() >= deadline or self.cut is not None:
                    return report
                if not collected:  # what only garbage holds goes at the next collection: no leak (a test's
                    collected = gc.collect() >= 0  # multiprocessing fork: its pipes in a cycle from 3.12 on)
                time.sleep(0.05)
                for probe in self.probes:  # a re-check looks again, never at a reused snapshot
                    if probe.fresh is not None:
                        probe.fresh()
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # a timeout (pytest-timeout's alarm) cut a look or the grace: one
                if self.cut is not None:  # last look, the alarm spent (the check died, its leak lost, unended)
                    raise
                self.cut = exc

    def _diff(self, before: dict[str, Snapshot], exempt: set[str], exempt_if: Callable[[str, str], bool] | None = None,
              before_taken: str | None = "before the test") -> tuple[LeakReport, dict[str, Snapshot]]:
        """One comparison and the snapshots it made; an identity is reported once, by the first
        probe that finds it (a kernel's runner is both a kernel process and a child process)."""
        seen = set(exempt)
        leaks: dict[str, Snapshot] = {}
        unchecked: dict[str, str] = {}
        now: dict[str, Snapshot] = {}
        for probe in self.probes:
            now[probe.kind] = snapshot = self._safe(probe)
            was = before.get(probe.kind, {})
            blind_before, blind_now = _unchecked(was), _unchecked(snapshot)
            if before_taken is not None:
                unchecked.update({f"{what} ({before_taken})": why for what, why in blind_before.items()})
            unchecked.update(blind_now)
            if probe.kind in blind_before or (blind_before and probe.places is None):
                continue  # the whole probe was blind, or which part saw what is not known: none is compared
            new = {k: v for k, v in snapshot.items() if k not in was and k not in seen
                   and not k.startswith(UNCHECKED) and not _seen_only_by(probe, k, blind_before)
                   and not (exempt_if is not None and exempt_if(k, v))}
            seen.update(new)
            if probe.kinds_in_identity:
                for identity, description in new.items():
                    leaks.setdefault(identity.partition("|")[0], {})[identity] = description
            else:
                leaks.setdefault(probe.kind, {}).update(new)
        return LeakReport(leaks, unchecked), now

    def cleanup(self, report: LeakReport) -> None:
        """End leaked processes (only ones the probes identified as ours) so later tests start clean."""
        for probe in self.probes:
            if probe.cleanup is None:
                continue
            for kind, items in report.leaks.items():
                for identity in items:
                    if (probe.kinds_in_identity and "|" in identity) or (not probe.kinds_in_identity
                                                                         and kind == probe.kind):
                        probe.cleanup(identity)

    @staticmethod
    def _safe(probe: Probe) -> Snapshot:
        """The probe's snapshot; one that raised is a part not looked at (:data:`UNCHECKED`)."""
        try:
            return probe.snapshot()
        except Exception as exc:  # noqa: BLE001 - a broken probe must not fail every test
            return {UNCHECKED + probe.kind: f"{type(exc).__name__}: {exc}"}


def _seen_only_by(probe: Probe, identity: str, blind_before: dict[str, str]) -> bool:
    """Whether only places blind before the test see ``identity`` now (what they saw then is not
    known: it could be old). One that another place, which did look before, sees now is compared.
    Only asked of a probe with :attr:`~.probes.Probe.places` when something was blind before."""
    return bool(blind_before) and all(place in blind_before for place in probe.places(identity))  # type: ignore[misc]


def _unchecked(snapshot: Snapshot) -> dict[str, str]:
    """``{what: why}`` of the parts ``snapshot`` could not look at."""
    return {key[len(UNCHECKED):]: why for key, why in snapshot.items() if key.startswith(UNCHECKED)}
