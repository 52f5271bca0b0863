"""An ssh upload of megabytes is not one round trip per 32 KiB: paramiko's SFTP file waited for
the ack of each write (~1 s per MiB on loopback, minutes for the 256 MiB default bound, which
looks like a hang); its writes are now pipelined, and ``close()`` still checks every ack."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelHandle

from .test_handed_b45_file_transfers import ok


@pytest.mark.hermes_transports("ssh")
def test_an_ssh_upload_of_megabytes_takes_no_round_trip_per_32_kib(hermes_kernel: KernelHandle,
                                                                  tmp_path: Path) -> None:
    """Each 32 KiB SFTP write waited for its ack: 8 MiB took ~8 s on loopback (40 MiB: 50 s; the
    256 MiB default bound: minutes that look like a hang); pipelined, well under a second."""
    data = os.urandom(8 << 20)
    (tmp_path / "big").write_bytes(data)
    started = time.monotonic()
    report = hermes_kernel.upload(tmp_path / "big", "big")
    took = time.monotonic() - started
    assert report.bytes == len(data)
    assert ok(hermes_kernel, "import hashlib\nhashlib.sha256(open('big', 'rb').read()).hexdigest()") == repr(
        hashlib.sha256(data).hexdigest())
    assert took < 4.0, f"8 MiB took {took:.1f} s"
