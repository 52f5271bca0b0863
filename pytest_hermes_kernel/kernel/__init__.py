"""The kernel core: the transport port, handle, registry, channel, watchdog, output, tool RPC.

Owns: what a kernel is and how its lifecycle goes, whatever runs it. Defines the interface it
needs from transports (:mod:`.contract`) instead of importing them.

May import: :mod:`pytest_hermes_kernel.errors`, :mod:`pytest_hermes_kernel.procs` and itself;
never pytest, docker, paramiko, or any other subpackage. The kernel runner (:mod:`.runner`, the
program on the far side of the channel) imports only the standard library; the core imports its
frame codec from it.
"""
