"""The docker transport: kernels in a kernel host container, reached over docker exec streams.

Owns: :mod:`.transport` (``DockerTransport``) and :mod:`.stream` (the exec stream as a
:class:`~pytest_hermes_kernel.kernel.contract.ByteStream`).

May import: the kernel core, :mod:`pytest_hermes_kernel.containers`,
:mod:`pytest_hermes_kernel.transports.detached`; docker-py only when used.
"""
