"""The execute-only transport: kernels through any backend that can only run commands.

Owns: :mod:`.transport` (``FileCellTransport``), :mod:`.backends` (the ``ExecuteBackend``
protocol, ``LocalShellBackend``, ``DockerExecBackend``), :mod:`.shell_io` (how ``LocalShellBackend``
hands ``sh`` a command and reads its output), :mod:`.scripts` (the shell scripts each execute runs)
and :mod:`.stream` (the file cell protocol as a byte stream).

May import: the kernel core, :mod:`pytest_hermes_kernel.containers` (the docker-exec backend),
:mod:`pytest_hermes_kernel.transports.detached`.
"""
