"""The leak probe's last look through a closed ssh transport (:func:`.probes.snapshot`).

A closed transport has no connection left, and its last probe listed nothing, saying nothing: a
cell's ``start_new_session`` daemon in an sshd container another process of the run kept (an
xdist worker with the shared ssh transport) went unseen by the test that left it, and was blamed
on the test that next connected the run's shared ssh transport. Its last look borrows the live
connection of an open ssh transport of this process to the same host (no new handshake), else
connects anew, straight to the host.

Owns: the choice of that connection, the ssh transports of this process that connected (weakly
held: whose connection may be borrowed) and the places the closed transport's records name. May
import: ``errors``.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ...errors import ContainerGoneError

if TYPE_CHECKING:
    from .connection import SshConnection
    from .transport import SshTransport

__all__ = ["connected", "its_places", "last_look_connection", "open_one_on_its_host"]

_connected: weakref.WeakSet[Any] = weakref.WeakSet()  # ssh transports of this process that connected


def connected(transport: SshTransport) -> None:
    """Note that ``transport`` made a connection (a closed one's last look may borrow it)."""
    _connected.add(transport)


def last_look_connection(transport: SshTransport) -> SshConnection | None:
    """A new connection for the leak probe's look through a closed transport, straight to its host
    (not through its ``connect_via``, closed with it); the caller closes it. A closed transport
    listed nothing: a cell's ``start_new_session`` daemon in an sshd container another process of
    the run kept went unseen by the test that left it, and was blamed on the test that next
    connected the run's shared ssh transport.

    :returns: ``None`` if the run's sshd container is gone: what ran there went with it.
    :raises TransportLostError: if the host cannot be reached (the check says it could not look).
    """
    try:
        return transport._connect(transport._silence.connect_timeout(True), last_look=True)
    except ContainerGoneError:
        return None


def open_one_on_its_host(transport: SshTransport) -> SshConnection | None:
    """The live connection of an open ssh transport of this process to the same host (the run's
    shared one, usually), for a closed one's last look: no new connection (an ssh handshake for
    each test's own transport). ``None`` if there is none."""
    where = _host_of(transport)
    for other in list(_connected):
        conn = other.current_connection
        if conn is not None and conn.usable and not other.closed and where is not None and _host_of(other) == where:
            return conn
    return None


def _host_of(transport: SshTransport) -> str | None:
    """The host a transport's kernels run on: its ``target``, else its sshd container's id."""
    if transport.target is not None:
        return str(transport.target)
    return None if transport.sshd is None else transport.sshd.last_container_id


def its_places(transport: SshTransport) -> list[str]:
    """Every place a closed transport's records name: its one host, by the address it dialled (a fault
    proxy's too), which its last look's connection need not share."""
    return sorted({*transport.made_dirs.places(), *transport.left.places()})
