"""One transport over several places of one kind (ssh targets, docker engines): kernels spread by load.

A :class:`Spread` holds one member transport per place and puts each new kernel on the member
with the fewest live kernels *of this process* (each xdist worker counts its own; a kernel is
live from its launch to its cleanup), ties going round the list in turn, each xdist worker
starting at another place (``gw<N>`` at place ``N mod count``), so two workers' first kernels
land on two places. Everything else about a kernel goes to the member it was placed on (its
launch record's ``extra[PLACE]``); its label and its first result's ``kernel.note`` name the
place. Leak snapshots are merged (each description says where), and a leak is cleaned by the
member that found it.
"""

from __future__ import annotations

import inspect
import itertools
import threading
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

from ..errors import TransportLostError
from ..kernel.contract import ByteStream, Launched, LaunchSpec, Transport
from ..kernel.files import KernelFiles

__all__ = ["PLACE", "Spread", "factory_signature"]

#: ``Launched.extra`` key: the place (a member's :meth:`Spread.place_of`) a kernel runs at.
PLACE = "place"
_SLOT = "spread_slot"  # Launched.extra key: this launch's entry in its place's live count

M = TypeVar("M", bound=Transport)


class Spread(Transport, Generic[M]):
    """Kernels spread over ``members`` (see module docstring); subclasses name a member's place.

    :param members: one transport per place, all of one kind; the spread closes them.
    """

    reattachable = True
    place_word: ClassVar[str] = ""
    """What a place is called in ``kernel.note`` (``"engine"``: "on docker engine URL")."""

    def __init__(self, members: Sequence[M]) -> None:
        self.members = list(members)
        self._live: dict[str, set[int]] = {self.place_of(m): set() for m in self.members}
        self._turn = _first_turn(len(self.members))
        self._slots = itertools.count()
        self._lock = threading.Lock()
        self._leaked_on: dict[tuple[str, str], M] = {}

    @abstractmethod
    def place_of(self, member: M) -> str:
        """Where ``member`` runs kernels (an ssh target, a docker engine URL)."""

    @abstractmethod
    def place_in(self, locator: dict[str, Any]) -> str | None:
        """The place a kernel's :meth:`locator` names (``None``: it names none)."""

    def prepare(self, member: M, spec: LaunchSpec) -> None:
        """Make ``member`` ready for kernel ``spec`` (the default: nothing to do).

        :raises KernelStartError: if it cannot be made ready.
        """

    @property
    def places(self) -> list[str]:
        """The members' places, in the order given."""
        return [self.place_of(m) for m in self.members]

    def live_kernels(self) -> dict[str, int]:
        """``{place: kernels of this process placed there and not cleaned up yet}``."""
        with self._lock:
            return {p: len(s) for p, s in self._live.items()}

    def _place(self) -> tuple[M, int]:
        with self._lock:
            n = len(self.members)
            order = [self.members[(self._turn + i) % n] for i in range(n)]
            member = min(order, key=lambda m: len(self._live[self.place_of(m)]))
            self._turn = (self.members.index(member) + 1) % n
            slot = next(self._slots)
            self._live[self.place_of(member)].add(slot)
            return member, slot

    def _member(self, place: object) -> M:
        member = next((m for m in self.members if self.place_of(m) == place), None)
        if member is None:
            raise TransportLostError(f"{place!r} is not one of this {self.name} transport's places ({self.places})",
                                     permanent=True)
        return member

    def _of(self, launched: Launched) -> M:
        return self._member(launched.extra.get(PLACE))

    # ------------------------------------------------------------------------------ kernels
    def launch(self, spec: LaunchSpec) -> Launched:
        """Start the kernel on the least loaded member (see module docstring)."""
        member, slot = self._place()
        try:
            self.prepare(member, spec)
            launched = member.launch(spec)
        except BaseException:
            with self._lock:
                self._live[self.place_of(member)].discard(slot)
            raise
        launched.extra.update({_SLOT: slot, PLACE: self.place_of(member)})
        where = " ".join(w for w in ("on", self.name, self.place_word, self.place_of(member)) if w)
        launched.note = "; ".join(n for n in (where, launched.note) if n)
        return launched

    def reattach(self, launched: Launched) -> ByteStream:
        return self._of(launched).reattach(launched)

    def kill(self, launched: Launched) -> bool:
        return self._of(launched).kill(launched)

    def alive(self, launched: Launched) -> bool:
        return self._of(launched).alive(launched)

    def seen_gone(self, launched: Launched) -> bool:
        return self._of(launched).seen_gone(launched)

    def reap(self, launched: Launched, timeout: float) -> bool:
        return self._of(launched).reap(launched, timeout)

    def frozen(self, launched: Launched) -> bool:
        return self._of(launched).frozen(launched)

    def note_leftovers(self, launched: Launched, kernel_id: str, processes: list[tuple[int, int, str]]) -> None:
        self._of(launched).note_leftovers(launched, kernel_id, processes)

    def exit_status(self, launched: Launched, timeout: float) -> int | None:
        return self._of(launched).exit_status(launched, timeout)

    def cleanup(self, launched: Launched) -> None:
        member = self._of(launched)
        member.cleanup(launched)
        with self._lock:
            self._live[self.place_of(member)].discard(launched.extra.pop(_SLOT, -1))

    def runner_log(self, launched: Launched, lines: int = 20) -> str:
        return self._of(launched).runner_log(launched, lines)

    def host_log(self, launched: Launched, lines: int = 20) -> str:
        return self._of(launched).host_log(launched, lines)

    def locator(self, launched: Launched) -> dict[str, Any]:
        return self._of(launched).locator(launched)

    def kept_locator(self, launched: Launched) -> dict[str, Any]:
        return self._of(launched).kept_locator(launched)

    def release(self, launched: Launched) -> None:
        self._of(launched).release(launched)

    def attach_kept(self, locator: dict[str, Any]) -> Launched:
        place = self.place_in(locator)
        launched = self._member(place).attach_kept(locator)
        launched.extra[PLACE] = place  # what is done to it later goes to that member too
        return launched

    def files(self, launched: Launched, workdir: str) -> KernelFiles:
        return self._of(launched).files(launched, workdir)

    def signal_pid(self, launched: Launched | None, pid: int, sig: int) -> None:
        """Send ``sig`` to ``pid`` where the kernel runs; ``launched=None``: at whichever place has it."""
        if launched is not None:
            return self._of(launched).signal_pid(launched, pid, sig)
        for member in self.members:
            try:
                return member.signal_pid(None, pid, sig)
            except ProcessLookupError:
                continue
        raise ProcessLookupError(f"no process {pid} of ours at {self.places}")

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        """The kernel's live processes: at its locator's place, else scanned at every place."""
        place = self.place_in(locator) if locator else None
        if place is not None:
            return self._member(place).kernel_processes(kernel_id, locator)
        return [p for m in self.members for p in m.kernel_processes(kernel_id, locator)]

    # ------------------------------------------------------------------------------ leaks, report
    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        """Every member's snapshot, merged; each description says where."""
        merged: dict[str, dict[str, str]] = {}
        for member in self.members:
            where = self.place_of(member)
            for kind, found in member.leak_snapshot(host_pid).items():
                merged.setdefault(kind, {}).update({i: f"{d} (at {where})" for i, d in found.items()})
                self._leaked_on.update({(kind, i): member for i in found})
        return merged

    def leak_cleanup(self, kind: str, identity: str) -> None:
        member = self._leaked_on.pop((kind, identity), None)
        for m in [member] if member is not None else self.members:
            m.leak_cleanup(kind, identity)

    def describe(self) -> str:
        return f"{self.name} over {len(self.members)} places ({'; '.join(m.describe() for m in self.members)})"

    def close(self) -> None:
        """Close every member."""
        for member in self.members:
            member.close()

    def was_closed(self) -> bool:
        """Whether a member was closed (:meth:`close` closes them all)."""
        return any(member.was_closed() for member in self.members)


def factory_signature(cls: type, name: str, annotation: str) -> inspect.Signature:
    """The signature of a transport name's factory: ``cls``'s keyword options and ``name``
    (what marker checks read of the factory)."""
    params = [p for p in inspect.signature(cls).parameters.values() if p.kind == p.KEYWORD_ONLY]
    extra = inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
    return inspect.Signature([*params, extra], return_annotation="Transport")


def _first_turn(places: int) -> int:
    """Where this process's round starts: xdist worker ``gw<N>`` at place ``N mod places``, else the first."""
    from ..containers.sharing import worker_id

    number = worker_id().removeprefix("gw")
    return int(number) % places if number.isdigit() else 0
