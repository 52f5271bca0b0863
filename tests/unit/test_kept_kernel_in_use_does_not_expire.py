"""Found by the breaker session (2026-12-05): a kept kernel held by a command (``hermes-kernel
attach`` or ``exec``) for longer than its TTL read as expired. Its runner's orphan timer runs only
while no client is attached, so the kernel lives on, but its record's expiry (the last detach plus
the TTL) had passed: ``hermes-kernel ls`` said ``expired``, the plain ``hermes-kernel sweep``
(kind ``kept``) ended the kernel under the console's feet, and the sweeps of dead hosts' kernel
processes, kernel dirs and containers no longer left it alone (``exempt_kernel_ids``). A kernel
that a command holds (its ``<id>.lock``, :func:`~pytest_hermes_kernel.containers.kept.in_use`)
does not expire now; leaving starts its TTL again, as before.
"""

from __future__ import annotations

import os

from pytest_hermes_kernel import postmortem
from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.plugin.keep import _keep_past_session
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, wait_until


def test_a_kept_kernel_a_command_holds_past_its_ttl_is_neither_expired_nor_swept(private_tmp, capsys):
    transport = LocalTransport()
    handle = KernelHandle(transport).start()
    pid = handle.pid
    try:
        handle.execute("x = 41")
        record, text = _keep_past_session("test_x.py::test_x[local]", handle, 1.0)
        assert record is not None, text
        kid = record.kernel_id
        with postmortem.attached(record) as console:  # `hermes-kernel attach`, left open past the TTL
            assert console.execute("x + 1").value == "42"
            wait_until(record.expired, 10.0, what="the record's TTL to run out while a command holds the kernel")

            assert kid in kept.exempt_kernel_ids(), "the dead hosts' sweeps would kill a kernel in use"
            assert main(["sweep", "kept", "--dry-run"]) == 0
            out = capsys.readouterr().out
            assert kid not in out and "0 kept" in out, out
            assert main(["ls"]) == 0
            line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith(kid))
            assert "in use" in line and "expired" not in line, line
            assert console.execute("x + 2").value == "43" and not gone(pid)
            assert kept.in_use_by(kid) == os.getpid()

        assert kept.in_use_by(kid) is None and not kept.find(kid).expired()  # left: its TTL starts again
        assert main(["ls"]) == 0
        line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith(kid))
        assert "in use" not in line, line
    finally:
        for record in kept.load_all():
            postmortem.end_kept(record)
        handle.shutdown()
        transport.close()
    wait_until(lambda: gone(pid), 10.0, what="the kept kernel to end")
