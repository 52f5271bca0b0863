"""The backend contract suite, as public API: what every transport must do.

A backend author gets the whole suite against their transport with two small files::

    # conftest.py
    import pytest
    from my_backend import MyTransport

    @pytest.fixture
    def hermes_transport():
        transport = MyTransport()
        yield transport
        transport.close()

    # test_contract.py
    from pytest_hermes_kernel.contract import *  # noqa: F401,F403  (tests and their fixtures)

The suite covers persistence, restart, errors, SystemExit and ``os._exit`` codes, an OOM kill
under ``hermes_oom`` (where a memory limit can be set), interrupt,
every watchdog outcome, output bounds, unicode and invalid bytes, stdin EOF, forged frames,
subprocess and C output attribution, ``os.fork`` in a cell, tool calls under cell authority, the
host's environment kept out of the kernel, the transport's own process listing and ``kill`` (its
whole process tree), a tree of files in and out, every file of it and files of several chunks
(where the transport moves files), the ``ExecuteBackend`` protocol of a
filecell transport's backend itself (stdout and stderr, exit status, whole output, timeout,
commands at once, no command in argv), and,
on transports that declare ``reattachable``, re-attach after a dropped stream (idle and mid-cell)
and ``transport_lost`` when the runner is really gone (these skip, with the reason, elsewhere).
Pid checks go through the transport (``kernel_processes``, ``signal_pid``), so a backend whose
kernels run elsewhere (a container, a remote host) is checked where they run. What a case leaves
behind (a process, a kernel dir) errors it even under the default ``--hermes-leak-check=warn``, and
the run's summary names the transport the cases ran on.

May import: pytest, the public API and everything below it (kernel, transports, errors); never
the plugin's internals (the suite runs under the plugin's fixtures, which it only names).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ..kernel.contract import Transport
from ..kernel.handle import KernelHandle
from ._probes import recv_timeout_problem
from .cancel import *  # noqa: F401,F403
from .in_flight import *  # noqa: F401,F403
from .channel_integrity import *  # noqa: F401,F403
from .crashes import *  # noqa: F401,F403
from .environment import *  # noqa: F401,F403
from .backend_protocol import *  # noqa: F401,F403
from .transfers import *  # noqa: F401,F403
from .lifecycle import *  # noqa: F401,F403
from .locales import *  # noqa: F401,F403
from .output import *  # noqa: F401,F403
from .reattach import *  # noqa: F401,F403
from .replies import *  # noqa: F401,F403
from .starting import *  # noqa: F401,F403
from .tools import *  # noqa: F401,F403
from .watchdog import *  # noqa: F401,F403


@pytest.fixture
def kernel_factory(hermes_kernel_factory: Callable[..., KernelHandle], hermes_transport: Transport,
                   ) -> Callable[..., KernelHandle]:
    """``kernel_factory(**options) -> KernelHandle`` on this test's transport (KernelOptions fields, tools=).

    The first one of a transport class in a process also checks, on a kernel of its own, that the
    transport's stream keeps its ``recv`` timeout (:func:`~._probes.recv_timeout_problem`): where it
    does not, every case errors at setup saying so (the suite hung at its first cell with a budget)."""
    problem = recv_timeout_problem(hermes_transport, hermes_kernel_factory)
    if problem:
        pytest.fail(f"{hermes_transport!r}: {problem}", pytrace=False)
    return hermes_kernel_factory


@pytest.fixture
def kernel(kernel_factory: Callable[..., KernelHandle]) -> KernelHandle:
    """A kernel with the run's options (``--hermes-timeout``, 60 s by default) and the test's ``hermes_kernel`` marker's."""
    return kernel_factory()
