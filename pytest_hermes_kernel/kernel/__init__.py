"""The kernel core: the transport port, handle, registry, channel, watchdog, output, tool RPC.

Owns: what a kernel is and how its lifecycle goes, whatever runs it. Defines the interface it
needs from transports (:mod:`.contract`) instead of importing them.

May import: :mod:`pytest_hermes_kernel.errors`, :mod:`pytest_hermes_kernel.procs` and itself;
never pytest, docker, paramiko, or any other subpackage.
"""
