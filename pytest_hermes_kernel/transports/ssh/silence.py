"""When a probe may try an ssh host that went silent again (:class:`Silence`).

The policy, its numbers and why: the module docstring of :mod:`.transport`. Stdlib only.
"""

from __future__ import annotations

import time

from ...errors import TransportLostError

#: While the host is silent, a probe tries a new connection at most once per this many seconds,
#: counted from when it was last found silent (keepalives or a try unanswered) ...
SILENT_RETRY_S = 3.0
#: ... and that try gives up after this many seconds (TCP connect, banner, auth each), not
#: ``connect_timeout``: on loopback a live sshd answers in ~0.1 s.
SILENT_CONNECT_S = 2.0


class Silence:
    """Whether the host is known to be silent (keepalives or a connect unanswered) and when a
    probe may try it again (see the module docstring of :mod:`.transport`).

    :param window_s: seconds a host stays silent after it was last found so
        (``keepalive_interval * keepalive_missed``).
    """

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.until = 0.0  # silent until then
        self.next_try = 0.0  # a probe's next short try
        self.next_end_try = 0.0  # the next short try of a probe that ends a runner (kill, cleanup)
        self.why = ""

    def mark(self, why: str, *, tried: bool = True) -> None:
        """The host was found silent; ``tried=False``: by a connection's keepalives, before any
        try of a new one, so a probe's short try may come at once (a stalled TCP flow, a NAT that
        dropped it, is no silent host)."""
        now = time.monotonic()
        self.until, self.next_try, self.why = now + self.window_s, now + (SILENT_RETRY_S if tried else 0.0), why

    def connect_timeout(self, probe: bool, *, ending: bool = False) -> float | None:
        """The connect timeout for the next try: ``None`` (the transport's own) unless a probe
        meets a silent host, which gets one short try per :data:`SILENT_RETRY_S`; probes that
        end a runner (``ending``) count their own tries, not the others'.

        :raises TransportLostError: (``permanent``) for a probe while silent between tries.
        """
        now = time.monotonic()
        if not probe or now >= self.until:
            return None
        if now < (self.next_end_try if ending else self.next_try):
            raise TransportLostError(f"ssh host not answering: {self.why}", permanent=True, timed_out=True)
        if ending:
            self.next_end_try = now + SILENT_RETRY_S + SILENT_CONNECT_S  # counted from the try's end
        return SILENT_CONNECT_S

    def failed(self, why: str, *, timed_out: bool, short: bool) -> None:
        """A connect failed: a timeout is silence; a short try that was refused waits its turn again."""
        if timed_out:
            self.mark(why)
        elif short:
            self.next_try = time.monotonic() + SILENT_RETRY_S


__all__ = ["SILENT_CONNECT_S", "SILENT_RETRY_S", "Silence"]
