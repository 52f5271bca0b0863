"""Compare probe snapshots taken before a test and after its fixture teardown."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from .probes import PROBES, Probe, Snapshot


@dataclass
class LeakReport:
    """What outlived a test: ``{kind: {identity: description}}``."""

    leaks: dict[str, Snapshot] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.leaks.values())

    def counts(self) -> dict[str, int]:
        return {kind: len(items) for kind, items in self.leaks.items() if items}

    def format(self, nodeid: str) -> str:
        lines = [f"{nodeid}: resources outlived the test (after fixture teardown):"]
        for kind, items in sorted(self.leaks.items()):
            for desc in sorted(items.values()):
                lines.append(f"  leaked {kind}: {desc}")
        lines.append("Hint: shut kernels down (use the hermes_* fixtures or `with start_kernel(...)`), "
                     "wait for subprocesses, join threads; mark intended leftovers with "
                     "@pytest.mark.hermes_allow_leaks(reason).")
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

    def before(self) -> dict[str, Snapshot]:
        return {p.kind: self._safe(p) for p in self.probes}

    def after(self, before: dict[str, Snapshot], exempt: Collection[str] = ()) -> LeakReport:
        """What is new since ``before``; retried for up to ``grace`` seconds while anything is.

        :param exempt: identities that are not leaks (e.g. a kernel kept for post-mortem).
        """
        deadline = time.monotonic() + self.grace
        while True:
            report, now = self._diff(before, set(exempt))
            self.last_clean = None if report else now
            if not report or time.monotonic() >= deadline:
                return report
            time.sleep(0.05)
            for probe in self.probes:  # a re-check looks again, never at a reused snapshot
                if probe.fresh is not None:
                    probe.fresh()

    def _diff(self, before: dict[str, Snapshot], exempt: set[str]) -> tuple[LeakReport, dict[str, Snapshot]]:
        """One comparison and the snapshots it made; an identity is reported once, by the first
        probe that finds it (a kernel's runner is both a kernel process and a child process)."""
        seen = set(exempt)
        leaks: dict[str, Snapshot] = {}
        now: dict[str, Snapshot] = {}
        for probe in self.probes:
            now[probe.kind] = snapshot = self._safe(probe)
            was = before.get(probe.kind, {})
            new = {k: v for k, v in snapshot.items() if k not in was and k not in seen}
            seen.update(new)
            if probe.kinds_in_identity:
                for identity, description in new.items():
                    leaks.setdefault(identity.partition("|")[0], {})[identity] = description
            else:
                leaks.setdefault(probe.kind, {}).update(new)
        return LeakReport(leaks), now

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
        try:
            return probe.snapshot()
        except Exception as exc:  # noqa: BLE001 - a broken probe must not fail every test
            del exc
            return {}
