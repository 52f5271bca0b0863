"""The leak probe over live transports (:class:`TransportResources`): what each one's
:meth:`~pytest_hermes_kernel.kernel.contract.Transport.leak_snapshot` lists where its kernels run,
and what it could not look through. :mod:`.probes`' ``PROBES`` list holds one.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable
from typing import Any

from .snapshot import UNCHECKED, Snapshot

#: Seconds a transport snapshot is reused while this process did nothing towards kernels.
REUSE_S = 2.0


class TransportResources:
    """The probe over what live transports hold where their kernels run (see
    :meth:`~pytest_hermes_kernel.kernel.contract.Transport.leak_snapshot`): kernel processes
    listed through the transport (so a remote engine or host is covered), the run's containers
    that nobody holds, open ssh channels. Each found thing can be cleaned by its transport.

    Each snapshot costs round trips (a docker API call and a scan in each container, an ssh
    request): about 25 ms on an idle 2-core machine with docker and ssh transports live, more
    under load. What a transport reports is only ever made by a call of one of its methods or
    by a cell (:func:`~pytest_hermes_kernel.kernel.contract.activity`), so while that count and
    the set of live transports stand still, the last snapshot is reused for up to
    :data:`REUSE_S` seconds: a test that starts no kernel (most unit tests) costs no round trip.
    :meth:`fresh` forces a look (the leak checker's re-checks, and after a cleanup).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._owner: dict[str, Any] = {}  # identity -> the transport that reported it (last snapshot)
        self._places: dict[str, set[str]] = {}  # identity -> the labels of every transport that did
        self._labels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._clock = clock
        self._last: tuple[int, frozenset[int], float, Snapshot] | None = None  # activity, transports, when, what
        self._lingering: list[Any] = []  # closed transports that showed something in the last snapshot
        self._blind: list[Any] = []  # closed transports the last snapshot could not look through
        self._again = False  # the next snapshot is a re-check of the same check (:meth:`fresh`)

    def fresh(self) -> None:
        """The next :meth:`snapshot` looks again: a re-check of the same check, which also looks
        through each closed transport the last one could not look through (forgotten after that
        look, it went unnamed by a re-check, and the check passed blind: see :meth:`snapshot`)."""
        self._last, self._again = None, True

    def snapshot(self) -> Snapshot:
        from ..kernel.contract import activity, quiet_activity
        from ..transports import forget_closed_transports, live_transports, watch_closed_transports

        watch_closed_transports()
        transports = live_transports()
        again, self._again = self._again, False
        transports += [t for t in self._lingering + (self._blind if again else []) if all(t is not x for x in transports)]
        count, ids, now = activity(), frozenset(map(id, transports)), self._clock()
        last = self._last
        if last is not None and last[0] == count and last[1] == ids and now - last[2] < REUSE_S:
            return dict(last[3])
        out: Snapshot = {}
        owners: dict[str, Any] = {}
        places: dict[str, set[str]] = {}
        forget_closed_transports()  # probed now; again only while they show something (below)
        blind: list[Any] = []
        showing: list[Any] = []  # transports that reported something (to end, and to see again)
        for transport in transports:
            label = self.label(transport)
            try:
                with quiet_activity():
                    found = {f"{kind}|{identity}": str(description)
                             for kind, items in transport.leak_snapshot(os.getpid()).items()
                             for identity, description in items.items()}
            except Exception as exc:  # noqa: BLE001 - an unreachable host (or a malformed answer) must not fail every test
                out[UNCHECKED + label] = f"{type(exc).__name__}: {exc}"
                blind.append(transport)  # a closed one is named by this check only: nothing here could end it
                continue
            if found:
                showing.append(transport)
            for key, description in found.items():
                out.setdefault(key, description)
                owners.setdefault(key, transport)
                places.setdefault(key, set()).add(label)
        _one_name_per_process(out)
        self._owner, self._places = owners, places
        # a closed transport is probed again while it shows something: the check's re-checks must
        # see a leak there again (forgotten, it vanished on the second look), and until it is ended
        still_open = live_transports()
        self._lingering = [t for t in showing if all(t is not x for x in still_open)]
        # and one it could not look through is looked through again by this check's re-checks (the next
        # check forgets it): a re-check after a transient leak elsewhere (a thread ending) dropped it and
        # passed clean; a stripping filecell backend's test passed once with no incomplete-check warning
        self._blind = [t for t in blind if all(t is not x for x in still_open)]
        # not if others acted meanwhile, nor when a host could not be looked at (look again next time)
        self._last = (count, ids, now, dict(out)) if count == activity() and not blind else None
        return out

    def places(self, key: str) -> set[str]:
        """The labels of the transports that reported ``key`` in the last snapshot (:attr:`Probe.places`)."""
        return self._places.get(key, set())

    def label(self, transport: Any) -> str:
        """How the report names ``transport``: its :meth:`describe` line, taken once (so a blind
        place is known by the same name before and after a test), with `` #2``, `` #3``... for a
        second, third live transport of the same description, in the order the probe first saw
        them; a ``describe()`` that raises does not hide the scan's own error."""
        label = self._labels.get(transport)
        if label is None:
            try:
                label = transport.describe()
            except Exception as exc:  # noqa: BLE001 - a name for the report, whatever describe() does
                label = f"{getattr(transport, 'name', type(transport).__name__)} transport (describe() failed: {exc!r})"
            taken = set(self._labels.values())  # another live transport has this description: number them
            label = self._labels.setdefault(transport, label if label not in taken else next(
                f"{label} #{n}" for n in range(2, len(taken) + 2) if f"{label} #{n}" not in taken))
        return label

    def cleanup(self, key: str) -> None:
        self._last = None
        transport = self._owner.get(key)
        if transport is not None:
            kind, _, identity = key.partition("|")
            transport.leak_cleanup(kind, identity)


def _one_name_per_process(found: Snapshot) -> None:
    """Keep one entry per kernel process two transports both list (a filecell backend that execs
    into a container the docker transport scans too): a ``remote kernel process`` identity ends
    in ``<pid>:<start ticks>:<kernel id>``, and a kernel id names one kernel, which runs in one
    place. The smallest key stays, so a process keeps its name from one snapshot to the next."""
    seen: dict[str, str] = {}
    for key in sorted(k for k in found if k.startswith("remote kernel process|")):
        tail = ":".join(key.rsplit(":", 3)[1:])
        if tail.endswith(":?"):  # a server's adopted child: no kernel id to tell it by
            continue
        if tail in seen:
            del found[key]
        else:
            seen[tail] = key
