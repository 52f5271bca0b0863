"""The ssh transport: kernels on any sshd host, or in an sshd container the run starts.

Owns: :mod:`.transport` (``SshTransport``), :mod:`.connection` (one paramiko connection with
keepalive and channel accounting), :mod:`.credentials` (the key file, host key pin and
known_hosts file a user gives, read with a clear error), :mod:`.silence` (when a host that went
silent is tried again), :mod:`.logs` (paramiko's log lines the kit reports itself, dropped) and :mod:`.sshd` (the run's shared sshd container).

May import: the kernel core, :mod:`pytest_hermes_kernel.containers`,
:mod:`pytest_hermes_kernel.transports.detached`; paramiko only when used. Whoever must sit on
the TCP path (the fault proxy) comes in through the ``connect_via`` seam, not an import.
"""
