"""The docker transport on the engine ``DOCKER_HOST`` names, and over several engines (issue 12 point 7).

The second engine is one this session starts itself (``second_docker_engine``: a dockerd in its
own network namespace, :mod:`tests.engines`). Containers are looked for on each engine by id
and by this process's host pid label, never by name.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.containers.labels import LABEL_HOST_PID, LABEL_RUN_ID
from pytest_hermes_kernel.errors import ConfigError, TransportUnavailableError
from pytest_hermes_kernel.transports import close_transport, make_transport
from pytest_hermes_kernel.transports.docker.engines import DockerEngines
from pytest_hermes_kernel.transports.spread import PLACE
from tests.engines import containers_on
from tests.support import wait_until


def mine_on(url: str) -> set[str]:
    return containers_on(url, f"{LABEL_HOST_PID}={os.getpid()}")


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env, stdin=subprocess.DEVNULL)


@pytest.fixture
def on_second_engine(second_docker_engine: str, first_docker_engine: str,
                     monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``DOCKER_HOST`` names the second engine for this test; nothing of this process may be
    added on the first one meanwhile."""
    before = mine_on(first_docker_engine)
    monkeypatch.setenv("DOCKER_HOST", second_docker_engine)
    yield second_docker_engine
    assert mine_on(first_docker_engine) <= before, "a container of this process appeared on the first engine"


def test_a_kernel_runs_on_the_engine_docker_host_names_and_leaves_nothing_there(on_second_engine):
    transport = make_transport("docker")  # no option: the environment's engine, DOCKER_HOST
    try:
        kernel = start_kernel(transport)
        r = kernel.execute("import os; os.path.exists('/.dockerenv')")
        cid = kernel.launched.extra["container"]
        snapshot = transport.leak_snapshot(os.getpid())

        assert (r.status, r.value) == ("ok", "True")
        assert transport.engine == on_second_engine and on_second_engine in kernel.launched.label
        assert mine_on(on_second_engine) == {cid}
        assert any(kernel.kernel_id in d for d in snapshot["remote kernel dir"]), snapshot
        assert transport.locator(kernel.launched)["docker_host"] == on_second_engine
        kernel.shutdown()
        wait_until(lambda: not any(transport.leak_snapshot(os.getpid()).values()), 10.0,
                   what="the leak probe on the second engine to find nothing")
    finally:
        close_transport(transport)
    assert mine_on(on_second_engine) == set(), "the run's container on the second engine outlived its last member"


DEAD_MEMBER = """
import sys, time
from pytest_hermes_kernel.transports.docker.transport import DockerTransport
print(DockerTransport(run_id=sys.argv[1]).shared_container(), flush=True)
time.sleep(600)
"""


def test_the_sweep_removes_a_dead_runs_container_on_the_engine_docker_host_names(on_second_engine, tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    run_id = f"engines-{uuid.uuid4().hex[:12]}"
    member = subprocess.Popen([sys.executable, "-c", DEAD_MEMBER, run_id], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert member.stdout is not None
        cid = member.stdout.readline().strip()
    finally:
        member.send_signal(signal.SIGKILL)
        member.wait(10)
        if member.stdout is not None:
            member.stdout.close()
    assert containers_on(on_second_engine, f"{LABEL_RUN_ID}={run_id}") == {cid}

    dry = cli("sweep", "--dry-run", "containers", env=env)
    swept = cli("sweep", "containers", env=env)

    assert f"would remove container {cid[:12]} on {on_second_engine}" in dry.stdout, dry.stdout + dry.stderr
    assert f"removed container {cid[:12]} on {on_second_engine}" in swept.stdout, swept.stdout + swept.stderr
    assert containers_on(on_second_engine, f"{LABEL_RUN_ID}={run_id}") == set()


def test_the_doctor_checks_every_engine_named_and_names_one_that_does_not_answer(second_docker_engine, first_docker_engine,
                                                                                 tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    both = cli("doctor", "docker", "--docker-hosts", f"default,{second_docker_engine}", env=env)
    gone = str(tmp_path / "no-engine.sock")
    bad = cli("doctor", "docker", "--docker-hosts", f"{second_docker_engine},unix://{gone}", env=env)

    assert both.returncode == 0 and f"at {first_docker_engine}" in both.stdout and f"at {second_docker_engine}" in both.stdout, \
        both.stdout + both.stderr
    assert bad.returncode == 1 and f"unix://{gone} did not answer" in bad.stdout, bad.stdout + bad.stderr


def test_kernels_spread_over_two_engines_by_their_live_kernels(second_docker_engine, first_docker_engine):
    transport = make_transport("docker", docker_hosts=("default", second_docker_engine))
    assert isinstance(transport, DockerEngines)
    try:
        kernels = [start_kernel(transport) for _ in range(3)]
        engines = [k.launched.extra[PLACE] for k in kernels]
        notes = [k.execute("1").kernel.note for k in kernels]
        live = transport.live_kernels()
        lone = next(i for i, e in enumerate(engines) if engines.count(e) == 1)
        kernels[lone].shutdown()
        fourth = start_kernel(transport)  # the engine that lost its only kernel has the fewest now

        assert set(engines) == {first_docker_engine, second_docker_engine}, engines
        assert sorted(live.values()) == [1, 2] and set(live) == {first_docker_engine, second_docker_engine}
        assert all(f"on docker engine {e}" in n for e, n in zip(engines, notes)), notes
        assert fourth.launched.extra[PLACE] == engines[lone]
        assert fourth.execute("x = 1; x + 1").value == "2"
        for k in [*kernels[:lone], *kernels[lone + 1:], fourth]:
            k.shutdown()
        assert transport.live_kernels() == {first_docker_engine: 0, second_docker_engine: 0}
    finally:
        close_transport(transport)
    assert mine_on(second_docker_engine) == set()


def test_a_bad_engine_url_or_one_that_does_not_answer_is_named(second_docker_engine, tmp_path):
    gone = f"unix://{tmp_path}/none.sock"

    with pytest.raises(ConfigError, match="bad docker engine URL 'ftp://x'"):
        make_transport("docker", docker_hosts=("ftp://x", second_docker_engine))
    with pytest.raises(TransportUnavailableError, match=f"{gone} did not answer"):
        make_transport("docker", docker_hosts=(second_docker_engine, gone))
    with pytest.raises(TransportUnavailableError, match=f"{gone} did not answer"):
        make_transport("docker", docker_host=gone)


def test_one_engine_named_twice_says_which_names_are_the_same_engine(first_docker_engine):
    """``default`` and the socket it resolves to were refused as "--hermes-docker-hosts must name two
    or more distinct engines, not ['unix:///...', 'unix:///...']": the flag named though the list
    came from the ini, and not a word that ``default`` was that socket."""
    with pytest.raises(ConfigError) as caught:
        make_transport("docker", docker_hosts=("default", first_docker_engine))

    assert str(caught.value).endswith(f"must name two or more distinct engines: 'default' and "
                                      f"'{first_docker_engine}' are one engine ({first_docker_engine})")
    assert "ini hermes_docker_hosts" in str(caught.value)


def test_an_image_missing_on_one_engine_is_loaded_there_from_another(second_docker_engine, first_docker_engine):
    from pytest_hermes_kernel.containers.engines import copy_image, engine_client
    from pytest_hermes_kernel.containers.images import KERNEL_HOST_TAG
    from pytest_hermes_kernel.errors import ContainerStartError

    tag = f"hermes-engines-test:{uuid.uuid4().hex[:8]}"  # on the first engine only
    first, second = engine_client(first_docker_engine), engine_client(second_docker_engine)
    first.images.get(KERNEL_HOST_TAG).tag(tag)
    transport = make_transport("docker", docker_hosts=(second_docker_engine, first_docker_engine), image=tag)
    try:
        # two live kernels: one on each engine (which goes first depends on the xdist worker)
        kernels = [start_kernel(transport), start_kernel(transport)]
        results = {k.launched.extra[PLACE]: k.execute("6 * 7") for k in kernels}
        for kernel in kernels:
            kernel.shutdown()

        assert sorted(results) == sorted((second_docker_engine, first_docker_engine))
        assert (results[second_docker_engine].status, results[second_docker_engine].value) == ("ok", "42")
        assert second.images.get(tag).id == first.images.get(tag).id
        with pytest.raises(ContainerStartError, match="is on neither docker engine .* Hint: .*build-image"):
            copy_image(f"{tag}-absent", first, second)
    finally:
        close_transport(transport)
        for client in (first, second):
            client.images.remove(tag)  # the tag only: the kit's image keeps its own
            client.close()


def test_an_image_is_copied_under_the_tag_asked_for_whatever_its_other_tags(second_docker_engine, first_docker_engine):
    from pytest_hermes_kernel.containers.engines import copy_image, engine_client
    from pytest_hermes_kernel.containers.images import BASE_TAG

    first, second = engine_client(first_docker_engine), engine_client(second_docker_engine)
    tags = [f"hermes-engines-tags:{uuid.uuid4().hex[:8]}" for _ in range(3)]
    base = first.images.get(BASE_TAG)
    try:
        for tag in tags:
            base.tag(tag)
        for tag in tags:  # each one in turn: saving under the image's first tag would miss the others
            copy_image(tag, first, second)
            assert second.images.get(tag).id == base.id, f"{tag} is not on the second engine"
    finally:
        for client in (first, second):
            for tag in tags:
                try:
                    client.images.remove(tag)  # the tag only
                except Exception:  # noqa: BLE001 - not copied there
                    pass
            client.close()
