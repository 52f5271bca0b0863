"""A docker engine that goes away mid-run (its dockerd stopped, its socket gone): a kernel start
placed there is a ``KernelStartError`` naming that engine, as the transport's contract says, on
one engine and over several. It was requests' bare ``ConnectionError: ('Connection aborted.',
FileNotFoundError(2, 'No such file or directory'))``, naming no engine: under
``--hermes-docker-hosts`` every other kernel start failed so, with no word of which engine.

The engine that goes away is one this test starts itself (:mod:`tests.engines`); the shared
second engine of the session stays up for the other tests.
"""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.containers.labels import LABEL_HOST_PID
from pytest_hermes_kernel.errors import KernelStartError, TransportUnavailableError
from pytest_hermes_kernel.transports import close_transport, forget_closed_transports, make_transport
from tests.engines import EngineUnavailable, SecondEngine, containers_on, start_second_engine, stop_second_engine


def close_out(transport) -> None:  # noqa: ANN001
    """Close ``transport`` and have the leak probes forget it now: their look right after a close
    belongs to this test's leak check (off here: its engine is gone), not to the next test's."""
    close_transport(transport)
    forget_closed_transports()


@pytest.fixture
def engine_to_lose(docker_ready: None) -> Iterator[SecondEngine]:
    """An engine of this test's own, stopped by the test (and here, whatever the test did)."""
    try:
        engine = start_second_engine()
    except EngineUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield engine
    finally:
        left = stop_second_engine(engine)
        engine.remove_dir()
        with warnings.catch_warnings():  # docker-py leaks the socket of each connect that failed on the stopped
            warnings.simplefilter("ignore", ResourceWarning)  # engine (the transport's close): collected here,
            gc.collect()  # not as an unraisable-exception warning in whatever test of this worker runs next
    assert not left, f"the engine left behind: {left}"


GONE = pytest.mark.hermes_allow_leaks("the engine this test stops cannot be looked at afterwards: the leak check "
                                      "says 'not checked' there; the test counts its containers on the first engine")


@GONE
def test_a_kernel_started_after_its_engine_went_away_is_a_start_error_naming_it(engine_to_lose):
    transport = make_transport("docker", docker_host=engine_to_lose.url)  # the engine answers here
    try:
        engine_to_lose.stop()

        with pytest.raises(KernelStartError) as caught:
            start_kernel(transport)

        assert f"the docker engine at {engine_to_lose.url} did not answer" in str(caught.value), caught.value
    finally:
        close_out(transport)


@GONE
def test_the_leak_probe_of_an_engine_gone_says_so_and_leaks_no_socket(engine_to_lose):
    """Each probe there was requests' ConnectionError, and docker-py left the socket of its failed
    connect to the garbage collector: a ResourceWarning (under -W error, an unraisable-exception
    error in whichever test of the worker ran next)."""
    transport = make_transport("docker", docker_host=engine_to_lose.url)
    try:
        engine_to_lose.stop()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", ResourceWarning)
            with pytest.raises(TransportUnavailableError, match=f"the docker engine at {engine_to_lose.url} did not"):
                transport.leak_snapshot(os.getpid())
            gc.collect()
        assert not [w for w in seen if issubclass(w.category, ResourceWarning)], [str(w.message) for w in seen]
    finally:
        close_out(transport)


@GONE
def test_over_two_engines_a_start_placed_on_the_one_gone_is_a_start_error_naming_it(engine_to_lose,
                                                                                     first_docker_engine):
    before = containers_on(first_docker_engine, f"{LABEL_HOST_PID}={os.getpid()}")
    transport = make_transport("docker", docker_hosts=(first_docker_engine, engine_to_lose.url))
    kernels, errors = [], []
    try:
        engine_to_lose.stop()
        for _ in range(2):  # one start goes to each engine (which first depends on the xdist worker)
            try:
                kernels.append(start_kernel(transport))
            except KernelStartError as exc:
                errors.append(str(exc))

        assert [k.execute("1").value for k in kernels] == ["1"], "the engine still up takes its kernel"
        assert len(errors) == 1 and f"the docker engine at {engine_to_lose.url} did not answer" in errors[0], errors
    finally:
        for kernel in kernels:
            kernel.shutdown()
        close_out(transport)
    assert containers_on(first_docker_engine, f"{LABEL_HOST_PID}={os.getpid()}") <= before
