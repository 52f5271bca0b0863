"""The kernel core: the transport port, handle, registry, channel, watchdog, output, tool RPC.

Owns: what a kernel is and how its lifecycle goes, whatever runs it. Defines the interface it
needs from transports (:mod:`.contract`) instead of importing them. The cell path, bottom up:
:mod:`.options` (every default), :mod:`.lifecycle` (``KernelState``, its transitions, the
``Loss`` record), :mod:`.channel` (frames), :mod:`.link` (one runner and its channel),
:mod:`.runtime` (runner and worker across generations), :mod:`.outcome` (what a cell ended
with and what it means), :mod:`.cell` (one cell's wait loop), :mod:`.handle` (the facade),
:mod:`.registry` (kernels by key).

May import: :mod:`pytest_hermes_kernel.errors`, :mod:`pytest_hermes_kernel.procs` and itself;
never pytest, docker, paramiko, or any other subpackage. The kernel runner (:mod:`.runner`, the
program on the far side of the channel) imports only the standard library; the core imports its
frame codec from it.
"""
