"""What shutting down many ssh kernels costs while their host is silent.

An ssh transport with N kernels on an sshd container of its own; the container is paused
(``docker pause``: a black hole) until the connection's keepalives find it dead, then every
kernel is shut down in turn. Each kill counts only its own short connect tries (at most
``SILENT_CONNECT_S``, every ``SILENT_RETRY_S``): the first tries at once, the others within the
retry window fail at once. The anchor: one full connect try (the transport's ``connect_timeout``),
what each kill would pay if it waited for the host.

    python benchmarks/silent_ssh_kills.py [--kernels 8]

Prints the seconds of all shutdowns and of each. Needs a docker engine and the kernel host image.
"""

from __future__ import annotations

import argparse
import logging
import time
import uuid

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import close_transport, make_transport


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=8)
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)  # each refused kill logs a warning
    transport = make_transport("ssh", run_id=f"bench-{uuid.uuid4().hex[:8]}")
    try:
        kernels = [start_kernel(transport) for _ in range(args.kernels)]
        api, cid = transport.sshd.docker.api, transport.sshd_container_id
        api.pause(cid)
        try:
            conn, deadline = transport.current_connection, time.monotonic() + 30
            while conn.unresponsive is None and time.monotonic() < deadline:
                time.sleep(0.1)  # the keepalives' own period: nothing to wait on but the flag
            if conn.unresponsive is None:  # the kills would meet a connection not known dead: another figure
                raise SystemExit("the keepalives did not find the paused sshd dead within 30 s: no figure")
            started, each = time.monotonic(), []
            for kernel in kernels:
                t0 = time.monotonic()
                kernel.shutdown()
                each.append(time.monotonic() - t0)
            total = time.monotonic() - started
        finally:
            api.unpause(cid)
    finally:
        close_transport(transport)
    print(f"{args.kernels} shutdowns on a paused sshd: {total:.2f} s in all; each: "
          + " ".join(f"{e:.2f}" for e in each))
    print(f"anchor: one full connect try per kill: {transport.connect_timeout:g} s each, "
          f"{transport.connect_timeout * args.kernels:g} s for {args.kernels}")


if __name__ == "__main__":
    main()
