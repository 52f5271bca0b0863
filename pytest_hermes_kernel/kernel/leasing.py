"""How an acquire of :class:`~.registry.KernelRegistry` gets its key's entry: the transport of a
new one made outside the registry's lock, for one caller of a key at a time, then the entry
leased under it, with what expired or went over the cap taken out for the caller to end.

Part of the registry: it reads and writes the registry's private map, under its lock.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..errors import KernelShutdownError

if TYPE_CHECKING:
    from .keys import KernelKey
    from .registry import KernelRegistry, _Entry

__all__ = ["leased_entry", "transport_for"]


def leased_entry(registry: KernelRegistry, key: KernelKey, pinned: bool, doomed: list[_Entry]) -> tuple[_Entry, bool]:
    """``key``'s entry with one more lease, made (pending) if it had none: ``(entry, made here)``; the
    kernels to end (expired, over the cap) are added to ``doomed``. :raises KernelShutdownError: if closed."""
    while True:
        making = None
        try:
            making = transport_for(registry, key)  # (outside the lock: a slow factory held every key's calls)
            with registry._lock:
                if registry._closed:
                    raise KernelShutdownError("the kernel registry is shut down")
                doomed += registry._expired_unlocked()  # first: the key's own kernel may be one of them (looked up
                entry = registry._entries.get(key)  # before, it was leased out of the map: KeyError, kernel left running)
                if entry is None and making is None:
                    continue  # its entry went meanwhile: its transport is made again
                creator = entry is None
                if entry is None:
                    entry = registry._new_entry_unlocked(key, pinned, making[0])  # type: ignore[index]
                entry.leases += 1
                entry.last_used = registry.clock()
                registry._entries.move_to_end(key)
                doomed += registry._over_cap_unlocked(keep=key)
                return entry, creator
        finally:
            if making is not None:
                with registry._lock:
                    if registry._making.get(key) is making[1]:
                        del registry._making[key]
                making[1][1].set()


def transport_for(registry: KernelRegistry, key: KernelKey) -> tuple[Any, tuple[int, threading.Event]] | None:
    """The transport of a new entry for ``key`` and its making (thread, event set once made), or ``None``: the
    key has an entry. The factory runs outside the lock, for one caller of a key at a time (a
    factory that asks a slow or silent docker engine held every other key's calls: their cells'
    ends, ``snapshot()``; a fast key's cell waited 2.7 s for a 3-s factory of another key)."""
    made = None
    try:  # (a Ctrl-C as the lock is let go, too: a making left behind held the key's later calls for ever)
        while made is None:
            with registry._lock:
                if key in registry._entries or registry._closed:
                    return None
                making = registry._making.get(key)
                if making is None or making[0] == threading.get_ident():  # (a signal handler in the factory)
                    made = registry._making[key] = (threading.get_ident(), threading.Event())
                    continue
            making[1].wait()
        return registry._factory(key), made
    except BaseException:
        if made is not None:
            with registry._lock:
                if registry._making.get(key) is made:
                    del registry._making[key]
            made[1].set()
        raise
