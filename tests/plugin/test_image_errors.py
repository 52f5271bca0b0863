"""A kernel host image that is missing or cannot be built errors each test that needs it with a
short report: the error (the image, the engine, the fix) and where the image's name came from,
without the page of the kit's frames each test's report held before.

The missing images are made-up names (never pulled: a bare name names no registry); the kit's
own image is left alone, its failed build is simulated by the inner run's conftest.
"""

from __future__ import annotations

import re
import uuid

import pytest

from pytest_hermes_kernel.containers.images import KERNEL_HOST_TAG

TWO_TESTS = """
def test_one(hermes_kernel):
    hermes_kernel.execute("1")


def test_two(hermes_kernel):
    hermes_kernel.execute("2")
"""

OWN_KERNEL = """
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import DockerTransport


def test_own_kernel():
    transport = DockerTransport(image={image!r})
    try:
        start_kernel(transport)
    finally:
        transport.close()
"""

UNBUILDABLE = """
import pytest

from pytest_hermes_kernel.containers import images
from pytest_hermes_kernel.errors import ImageBuildError


@pytest.fixture(autouse=True)
def _no_build(monkeypatch):
    def fail(*args, **kwargs):
        raise ImageBuildError("debootstrap is not installed; cannot build hermes-kernel-base:bookworm.\\n"
                              "Hint: is debootstrap installed?")
    monkeypatch.setattr(images, "ensure_image", fail)
"""


def made_up_image() -> str:
    return f"hermes-no-such-image:{uuid.uuid4().hex[:8]}"


def reports_by_test(out: str) -> dict[str, list[str]]:
    """Each errored or failed test's report lines, by the test's name in its report header
    (without the line pytest-xdist adds: ``[gw0] linux -- Python ...``)."""
    reports = re.split(r"^=+ (?:ERRORS|FAILURES) =+$", out, flags=re.M)[1].split("short test summary info")[0]
    parts = re.split(r"^_+ (?:ERROR at \w+ of )?(\S+) _+$", reports, flags=re.M)
    return {name: [line for line in body.splitlines()
                   if line.strip() and not set(line) <= set("=_ ") and not re.match(r"\[gw\d+\] ", line)]
            for name, body in zip(parts[1::2], parts[2::2])}


def assert_short(report: list[str], out: str) -> None:
    """A few lines of message, no frame of the kit nor any source line of a traceback."""
    assert len(report) <= 6, out
    assert not [line for line in report if "pytest_hermes_kernel/" in line or re.match(r"^(E |>|\s+raise )", line)], out


def short_reports_of_both_tests(result: pytest.RunResult) -> tuple[list[list[str]], str]:
    """The reports of the inner run's two tests, each checked to be short; ``(reports, output)``."""
    out = result.stdout.str()
    result.assert_outcomes(errors=2)
    reports = reports_by_test(out)
    assert sorted(reports) == ["test_one[docker]", "test_two[docker]"], out
    for report in reports.values():
        assert_short(report, out)
    return list(reports.values()), out


@pytest.mark.parametrize("source", ["--hermes-image", "PYTEST_HERMES_IMAGE", "ini hermes_image"])
def test_a_missing_image_errors_each_test_once_naming_it_its_setting_and_the_fix(run, pytester, monkeypatch,
                                                                                 docker_ready, source):
    image = made_up_image()
    pytester.makepyfile(test_suite=TWO_TESTS)
    args = ["--hermes-transport=docker"]
    if source == "--hermes-image":
        args.append(f"--hermes-image={image}")
    elif source == "PYTEST_HERMES_IMAGE":
        monkeypatch.setenv("PYTEST_HERMES_IMAGE", image)
    else:
        pytester.makeini(f"[pytest]\nhermes_image = {image}\n")

    reports, out = short_reports_of_both_tests(run(*args))
    for report in reports:
        assert report[0].startswith(f"ImageMissingError: image {image} is not on the docker engine at "), out
        assert f"`hermes-kernel doctor --image {image}`" in "\n".join(report), out
        assert "`hermes-kernel build-image`" in "\n".join(report), out
        assert report[-1] == (f"The image {image} is named by {source}; without that setting the kit's own image, "
                              f"{KERNEL_HOST_TAG}, is used (built on first use)."), out
    assert re.search(r"^ERROR test_suite.py::test_one\[docker\] - ImageMissingError: image", out, re.M), out


def test_the_kit_s_image_that_cannot_be_built_errors_each_test_shortly_under_xdist(run, pytester, docker_ready):
    pytester.makeconftest(UNBUILDABLE)
    pytester.makepyfile(test_suite=TWO_TESTS)

    reports, out = short_reports_of_both_tests(run("-n", "2", "--hermes-transport=docker"))
    for report in reports:
        assert report[0] == "ImageBuildError: debootstrap is not installed; cannot build hermes-kernel-base:bookworm.", out
        assert report[-1].startswith(f"This is the kit's own image, {KERNEL_HOST_TAG}: no --hermes-image, "), out
        assert "`hermes-kernel build-image` builds it" in report[-1] and "`hermes-kernel doctor`" in report[-1], out


def test_an_image_a_test_gives_its_own_transport_fails_it_shortly(run, pytester, docker_ready):
    image = made_up_image()
    pytester.makepyfile(test_own=OWN_KERNEL.format(image=image))

    result = run("--hermes-image=hermes-other-image:1")

    out = result.stdout.str()
    result.assert_outcomes(failed=1)
    [report] = reports_by_test(out).values()
    assert_short(report, out)
    assert report[0].startswith(f"ImageMissingError: image {image} is not on the docker engine"), out
    assert report[-1] == f"The image {image} was given to the transport (image=), not by --hermes-image.", out
