"""Docker plumbing shared by the docker and ssh transports and the docker-exec backend.

Owns: run labels, container start/stop (:mod:`.lifecycle`), the sweep of dead runs'
containers and run files (:mod:`.sweep`), cross-process sharing of one container by a run's
processes (:mod:`.sharing`) with its files in the run's private directory (:mod:`.rundir`),
the sshd key pairs (:mod:`.keys`), the kernel host image build (:mod:`.images`,
:mod:`.base_image`) and its build context as package data (``kernel-host/``: Dockerfile,
entrypoint, sshd config).

May import: :mod:`pytest_hermes_kernel.errors`, :mod:`pytest_hermes_kernel.procs`, the kernel
core, docker-py and testcontainers (only inside functions: nothing loads docker at import).
"""
