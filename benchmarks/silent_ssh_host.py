"""What a silent ssh host costs the leak check, snapshot after snapshot.

An ssh transport with one kernel; its sshd container is paused (``docker pause``: no FIN, no RST,
a black hole) and the transport probe of the leak check is asked for a fresh snapshot several
times, a fixed interval apart, as a run's tests would. The first snapshot finds the connection
dead by its keepalives; each later one either fails at once (the host is known silent) or makes
one short connect try (``SILENT_CONNECT_S`` at most, every ``SILENT_RETRY_S``). The anchor, timed
in the same run: one full connect try (``connect_timeout``), what every snapshot paid when each
one tried a full connect.

    python benchmarks/silent_ssh_host.py [--snapshots 6] [--interval 0.5]

Prints each snapshot's seconds and whether the host was reported as not checked; then unpauses
the container and prints how long until a snapshot looks at the host again. Needs a docker engine
and the kernel host image (``hermes-kernel build-image``).
"""

from __future__ import annotations

import argparse
import time

from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.leaks import probes
from pytest_hermes_kernel.transports import close_transport, make_transport
from pytest_hermes_kernel.transports.ssh.transport import SILENT_CONNECT_S, SILENT_RETRY_S


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshots", type=int, default=6, help="snapshots while the host is paused")
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between snapshots (a test's length)")
    args = ap.parse_args()

    transport = make_transport("ssh")
    kernel = KernelHandle(transport).start()
    try:
        assert kernel.execute("1").status == "ok"
        resources = probes.TransportResources()
        api = transport.sshd.docker.api  # type: ignore[attr-defined]
        cid = transport.sshd_container_id  # type: ignore[attr-defined]
        print(f"connect_timeout (the anchor): {transport.connect_timeout:g} s; "  # type: ignore[attr-defined]
              f"short try: {SILENT_CONNECT_S:g} s every {SILENT_RETRY_S:g} s")
        api.pause(cid)
        try:
            for n in range(1, args.snapshots + 1):
                resources.fresh()
                started = time.monotonic()
                blind = any(k.startswith(probes.UNCHECKED) for k in resources.snapshot())
                print(f"snapshot {n} while paused: {time.monotonic() - started:5.2f} s, "
                      f"{'not checked' if blind else 'checked'}")
                time.sleep(args.interval)
            started = time.monotonic()  # the anchor: what each snapshot paid when it tried a full connect
            try:
                transport._connection()  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - the paused host does not answer: that is the measurement
                pass
            print(f"anchor, one full connect try while paused: {time.monotonic() - started:5.2f} s")
        finally:
            api.unpause(cid)
        unpaused = time.monotonic()
        while True:
            resources.fresh()
            if not any(k.startswith(probes.UNCHECKED) for k in resources.snapshot()):
                break
            time.sleep(0.1)
        print(f"looked at again {time.monotonic() - unpaused:.2f} s after the unpause")
    finally:
        kernel.shutdown()
        close_transport(transport)


if __name__ == "__main__":
    main()
