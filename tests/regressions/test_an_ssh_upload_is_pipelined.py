"""An ssh upload of megabytes is not one round trip per 32 KiB: paramiko's SFTP file waited for
the ack of each write (~1 s per MiB on loopback, minutes for the 256 MiB default bound, which
looks like a hang); its writes are now pipelined, and ``close()`` still checks every ack.

How fast is a figure (``benchmarks/handed_bounds.py``: the upload row); what is asserted is that the
writes do not wait for their acks one by one. The link to sshd is given a latency (the fault
proxy's), so the bug's path costs a round trip per write, at least ``WRITES * 2 * LATENCY_S``
(51 s; 45.6 s for 8 MiB at 0.05 s, measured), and the bound is a third of that; pipelined, the same
upload took 4.5 to 5.3 s on a loaded 2-core host.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelHandle

from .test_handed_b45_file_transfers import ok

SIZE_BYTES = 8 << 20
#: Seconds the fault proxy holds each chunk, each way.
LATENCY_S = 0.1
#: paramiko's SFTP writes are of 32 KiB: one round trip each on the bug's path.
WRITES = SIZE_BYTES // (32 << 10)
BOUND_S = WRITES * 2 * LATENCY_S / 3


@pytest.mark.hermes_transports("ssh")
def test_an_ssh_upload_of_megabytes_takes_no_round_trip_per_32_kib(hermes_kernel: KernelHandle, hermes_faults,
                                                                  tmp_path: Path) -> None:
    """Each 32 KiB SFTP write waited for its ack: 8 MiB took ~8 s on loopback (40 MiB: 50 s; the
    256 MiB default bound: minutes that look like a hang)."""
    data = os.urandom(SIZE_BYTES)
    (tmp_path / "big").write_bytes(data)
    assert hermes_kernel.execute("1").status == "ok"
    hermes_faults.transport_drop(hermes_kernel, "latency", latency=LATENCY_S)
    started = time.monotonic()
    report = hermes_kernel.upload(tmp_path / "big", "big")
    took = time.monotonic() - started
    assert report.bytes == len(data)
    assert ok(hermes_kernel, "import hashlib\nhashlib.sha256(open('big', 'rb').read()).hexdigest()") == repr(
        hashlib.sha256(data).hexdigest())
    assert took < BOUND_S, f"8 MiB took {took:.1f} s over a link of {LATENCY_S} s each way ({WRITES} writes)"
