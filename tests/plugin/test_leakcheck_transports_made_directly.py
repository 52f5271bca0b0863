"""Found by the breaker session (2026-12-05): the leak check probed only the transports that
``get_transport``/``make_transport`` made. A transport constructed directly (``DockerTransport(...)``,
``SshTransport(target=...)``, a ``FileCellTransport`` over a backend of one's own: what a conftest
that overrides ``hermes_transport`` returns, as the backend walkthrough's does) was never probed:
a kernel a test left running in its container or on its host passed unseen, or was reported on
a later test whose shared transport happened to scan the same container. A transport that starts a
kernel is probed from then on, however it was made (the one a wrapper launched through, for a
wrapper such as the fault layer's, whose own probe asks it)."""

from __future__ import annotations

import pytest

CONFTEST = """
import pytest
from pytest_hermes_kernel.transports.docker.transport import DockerTransport

@pytest.fixture(scope="session")
def own_docker():
    transport = DockerTransport(container="fresh")  # a backend author's own, made directly
    yield transport
    transport.close()

@pytest.fixture
def hermes_transport(own_docker):
    return own_docker
"""

TESTS = """
from pytest_hermes_kernel import start_kernel

KERNELS = []  # keeps the handle alive, as a module-level or cached kernel would

def test_forgets_a_kernel(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"
    KERNELS.append(start_kernel(hermes_kernel.transport))

def test_clean(hermes_kernel):
    assert hermes_kernel.execute("2 + 2").value == "4"
"""


@pytest.mark.usefixtures("docker_ready")
def test_a_kernel_left_on_a_transport_made_directly_is_reported_on_its_test(pytester, run):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_direct=TESTS)

    result = run("--hermes-leak-check=error", "-p", "no:randomly")

    result.assert_outcomes(passed=2, errors=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_forgets_a_kernel*",
                                 "E *LeakError: test_direct.py::test_forgets_a_kernel: resources outlived*",
                                 "*leaked remote kernel process: pid * in container * (kernel *"], consecutive=False)
    assert "test_direct.py::test_clean: resources outlived" not in out, out[-3000:]


def test_a_transport_is_probed_once_it_started_a_kernel_and_a_wrapper_through_the_one_it_wraps():
    from pytest_hermes_kernel import start_kernel
    from pytest_hermes_kernel.faults.faulty_transport import FaultyTransport
    from pytest_hermes_kernel.transports import close_transport, live_transports, make_transport
    from pytest_hermes_kernel.transports.local import LocalTransport

    direct, made = LocalTransport(server=False), make_transport("local", server=False)
    wrapper = FaultyTransport(made)
    try:
        assert not any(t is direct for t in live_transports())  # nothing started: nothing to probe
        with start_kernel(direct) as kernel:
            assert kernel.execute("1").value == "1"
        with start_kernel(wrapper) as kernel:
            assert kernel.execute("2").value == "2"
        live = live_transports()
        assert any(t is direct for t in live) and any(t is made for t in live)
        assert not any(t is wrapper for t in live), "the wrapper's probe asks the transport it wraps: once is enough"
    finally:
        direct.close()
        close_transport(made)
