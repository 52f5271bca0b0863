"""The kernel runner's entry point: ``python <runner file> MODE ...`` dispatches the modes.

::

    serve --fd N          local: the channel is the inherited fd N        (.serve)
    serve --listen SOCK   remote: unix socket SOCK, daemonizes            (.serve)
    serve --listening-fd N  remote: on the bound socket N, a forked kernel's fresh start (.serve)
    server --fd N         local kernel server: forks kernels on request   (.server)
    server --stdio        remote kernel server on the exec's stream       (.server_remote)
    relay SOCK            stdin/stdout <-> the unix socket SOCK           (.relay)
    client DIR PARAMS     execute-only backends: one long poll            (.client)

Each mode imports only its own modules, so a relay or a client poll never pays for the
worker and supervisor code.
"""

from __future__ import annotations

import signal
import sys

USAGE = "usage: <runner> serve --fd N | serve --listen SOCK | serve --listening-fd N | server --fd N | server --stdio | relay SOCK | client DIR PARAMS\n"


def _flush_startup_output() -> None:
    """Send what the interpreter's start printed (a ``sitecustomize``, a ``.pth`` file of the
    kernel's ``python``) to this process's own stdout and stderr now. Left in ``sys.stdout``'s
    buffer, a forked worker inherited it and wrote it into a cell's output when the old stream
    was collected: the first cell of a kernel showed ``sitecustomize says hello`` it never printed,
    now and then (found by a breaker helper)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed or broken stdout: the output has nowhere to go
            pass


#: Signals the runner itself relies on (interrupts, its stop, its children's ends, its probes' alarm).
RUNNER_SIGNALS = ("SIGINT", "SIGTERM", "SIGCHLD", "SIGALRM")


def _unblock_signals() -> None:
    """Unblock the signals the runner relies on, whatever the starting process blocked: the mask
    is inherited across ``fork`` and ``exec``, and a kernel started from a thread that blocked
    SIGINT (one that leaves signals to a ``sigwait`` thread) took no interrupt: its cells ran on,
    the watchdog reset them, state lost. Any other signal the host blocked stays blocked in the
    kernel, as in any process it starts (``tests/regressions/test_a_forked_kernel_inherits_what_the_host_has_now.py``)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [getattr(signal, name) for name in RUNNER_SIGNALS])


def main(argv: list[str]) -> int:
    """Run the mode ``argv`` names; returns the process exit status (2: bad usage)."""
    _unblock_signals()
    _flush_startup_output()
    if len(argv) >= 3 and argv[0] == "serve" and argv[1] == "--fd":
        from .serve import serve_fd

        serve_fd(int(argv[2]))
    elif len(argv) >= 3 and argv[0] == "serve" and argv[1] == "--listen":
        from .serve import serve_listen

        serve_listen(argv[2])
    elif len(argv) >= 3 and argv[0] == "serve" and argv[1] == "--listening-fd":
        from .serve import serve_listening_fd

        serve_listening_fd(int(argv[2]))
    elif len(argv) >= 3 and argv[0] == "server" and argv[1] == "--fd":
        from .server import serve_server_fd

        serve_server_fd(int(argv[2]))
    elif len(argv) >= 2 and argv[0] == "server" and argv[1] == "--stdio":
        from .server_remote import serve_server_stdio

        serve_server_stdio()
    elif len(argv) >= 2 and argv[0] == "relay":
        from .relay import relay

        try:
            relay(argv[1])
        except (BrokenPipeError, ConnectionError):
            pass
    elif len(argv) >= 3 and argv[0] == "client":
        from .client import client

        return client(argv[1], argv[2])
    else:
        sys.stderr.write(USAGE)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
