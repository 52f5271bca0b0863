"""Kernel host images (issue #12 point 3): the image setting reaches the docker and ssh
transports, ``hermes-kernel doctor --image`` says what an image has and lacks, and a missing
image is pulled only from a registry its name names (loopback only here), with a clear error.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.containers.image_check import names_registry, require_image
from pytest_hermes_kernel.errors import ContainerStartError

pytestmark = pytest.mark.usefixtures("docker_ready")

KIT_IMAGE = "hermes-kernel-host:latest"
BASE_IMAGE = "hermes-kernel-base:bookworm"  # the rootfs the kit's image is built on: no tini, no hermes user


@pytest.fixture
def client() -> Iterator[object]:
    import docker

    c = docker.from_env()
    yield c
    c.close()


def _doctor(image: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "doctor", "--image", image],
                          capture_output=True, text=True, timeout=120)


def test_doctor_passes_the_kits_own_image():
    done = _doctor(KIT_IMAGE)
    assert done.returncode == 0, done.stdout + done.stderr
    for need in ("sh", "init", "python3", "user", "sshd"):
        assert any(line.split()[:2] == [need, "ok"] for line in done.stdout.splitlines()), done.stdout


def test_doctor_names_what_an_image_lacks(client):
    client.images.get(BASE_IMAGE)  # built with the kit's image; a missing one is a setup problem
    done = _doctor(BASE_IMAGE)
    assert done.returncode == 1, done.stdout
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert lines["init"].split()[1] == "NO" and "tini" in lines["init"], done.stdout
    assert lines["user"].split()[1] == "NO" and "hermes" in lines["user"], done.stdout
    assert lines["python3"].split()[1] == "ok", done.stdout


def test_doctor_on_a_missing_image_says_so_and_what_to_do():
    """A bare name is never pulled (README, Image missing), so the hint never says `docker pull`
    for one: it did, on a machine that can reach no registry."""
    image = f"hermes-no-such-image:{uuid.uuid4().hex[:8]}"
    done = _doctor(image)
    assert done.returncode == 1 and "is not on the docker engine" in done.stdout, done.stdout
    assert "docker pull" not in done.stdout, done.stdout
    assert f"build it (`docker build -t {image} ...`) or load it (`docker load -i FILE`)" in done.stdout, done.stdout
    assert "never pulled" in done.stdout and "`hermes-kernel build-image`" in done.stdout, done.stdout


def test_doctor_on_a_missing_image_with_a_registry_says_it_is_pulled():
    image = f"127.0.0.1:9/hermes/no-such-image:{uuid.uuid4().hex[:8]}"  # loopback: nothing is pulled by doctor
    done = _doctor(image)
    assert done.returncode == 1 and "is not on the docker engine" in done.stdout, done.stdout
    assert "pulls it from 127.0.0.1:9 when it first needs it" in done.stdout, done.stdout
    assert f"`docker pull {image}`" in done.stdout, done.stdout


def test_the_hint_for_the_kits_own_image_is_build_image():
    from pytest_hermes_kernel.containers.image_check import missing_image_hint

    assert missing_image_hint(KIT_IMAGE).startswith("build it with `hermes-kernel build-image`")


def test_a_missing_image_without_a_registry_in_its_name_is_never_pulled(client):
    with pytest.raises(ContainerStartError, match="names no registry, so it is not pulled") as info:
        require_image(client, f"hermes-no-such-image:{uuid.uuid4().hex[:8]}")
    assert "hermes-kernel build-image" in str(info.value)


def test_a_missing_image_from_an_unreachable_registry_names_the_registry(client):
    image = f"127.0.0.1:9/hermes/no-such-image:{uuid.uuid4().hex[:8]}"  # loopback, nothing listens on port 9
    assert names_registry(image) == "127.0.0.1:9"
    with pytest.raises(ContainerStartError, match=r"could not be pulled from 127\.0\.0\.1:9"):
        require_image(client, image)


def test_registry_names_are_told_from_plain_names():
    assert names_registry("localhost/a:1") == "localhost"
    assert names_registry("registry.example:5000/team/kernel:2") == "registry.example:5000"
    assert names_registry("team/kernel:2") is None and names_registry("kernel") is None


INNER = """
def test_kernel_runs_in_the_image_the_setting_names(hermes_transport, hermes_kernel):
    assert hermes_transport.image == "{image}"
    assert hermes_kernel.execute("6 * 7").value == "42"
    container = hermes_transport.client.containers.get(hermes_kernel.launched.extra["container"])
    assert container.attrs["Config"]["Image"] == "{image}"
"""


def test_the_image_setting_reaches_the_docker_transport(pytester: pytest.Pytester, client,
                                                         monkeypatch: pytest.MonkeyPatch):
    image = f"hermes-kernel-host:setting-{uuid.uuid4().hex[:8]}"
    client.images.get(KIT_IMAGE).tag(image)  # the same image under a name only this test uses
    try:
        pytester.makepyfile(test_inner=INNER.format(image=image))
        monkeypatch.setenv("PYTEST_HERMES_IMAGE", image)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hermes-transport=docker", timeout=300)
        result.assert_outcomes(passed=1)
    finally:
        client.images.remove(image)  # the tag only; the kit's image stays
