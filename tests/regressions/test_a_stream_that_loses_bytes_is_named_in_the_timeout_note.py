"""A transport whose stream loses bytes (a relay with a fixed read buffer that drops the rest of
a big read) left the host waiting for the rest of a frame that never came: the cell ran to its
budget and came back ``timeout``, "the interrupt was ineffective; the kernel was killed (SIGKILL)
and restarted", which sent the backend's author after the cell or the interrupt, not the
stream. The note now says the channel holds an unfinished frame and that bytes were lost on the
way (found writing a transport of one's own, 2026-12-05).
"""

from __future__ import annotations

from pytest_hermes_kernel import WatchdogPolicy, start_kernel
from pytest_hermes_kernel.transports.local import LocalTransport

KEPT = 4096  # bytes of each read the broken relay passes on


class LosesBytes:
    def __init__(self, inner):
        self.inner = inner

    def send(self, data: bytes) -> None:
        self.inner.send(data)

    def recv(self, timeout):
        return self.inner.recv(timeout)[:KEPT]

    def close(self) -> None:
        self.inner.close()


class LossyTransport(LocalTransport):
    def launch(self, spec):
        launched = super().launch(spec)
        launched.stream = LosesBytes(launched.stream)
        return launched


def test_a_cell_whose_result_lost_bytes_says_so_in_its_timeout_note() -> None:
    transport = LossyTransport(server=False)
    try:
        with start_kernel(transport, watchdog=WatchdogPolicy(interrupt_grace=0.5, kill_grace=2.0)) as kernel:
            result = kernel.execute("print('x' * 200_000)", timeout=1.5)
    finally:
        transport.close()

    assert result.status == "timeout", result.summary()
    assert "the interrupt was ineffective (the channel holds " in result.summary(), result.summary()
    assert "of an unfinished frame from the runner: bytes of its stream were lost or cut on the way" \
        in result.summary(), result.summary()
