"""A missing or unbuildable kernel host image errors a test with a short report, not a traceback.

The error comes from deep inside a container start (fixture, transport, container host,
container lifecycle), and its traceback was a page of the kit's own frames per test that said
nothing its message does not. The report now holds the message (the image, the engine, the fix),
then where the image's name came from: the setting that named it, or the kit's own image (no
setting), or the transport's ``image=`` argument. It holds for every phase and every path to the
error (the ``hermes_*`` fixtures, a test's own ``start_kernel(...)`` or registry).

Turn it off with ``-p no:pytest_hermes_kernel.plugin.image_errors`` (the full traceback again).
"""

from __future__ import annotations

from typing import Any

import pytest

from ..errors import ImageBuildError, ImageMissingError
from .settings import HermesSettings, settings_key


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    error = call.excinfo.value if call.excinfo is not None else None
    if report.failed and isinstance(error, (ImageMissingError, ImageBuildError)):
        report.longrepr = _with_summary_line(short_report(error, item.config.stash[settings_key]), item)
    return report


def _with_summary_line(text: str, item: pytest.Item) -> Any:
    """``text`` as a report that also gives the short summary its first line: pytest 8
    takes that line only from an exception's report, and a plain text left it bare (``ERROR
    test_suite.py::test_one[docker]``, no reason). One native entry prints ``text`` as it is (also
    through xdist, which sends it as an exception's report)."""
    try:
        from _pytest._code.code import ExceptionChainRepr, ReprEntryNative, ReprFileLocation, ReprTraceback
    except ImportError:  # pragma: no cover - a pytest that moved them: the text alone, as 9.0 shows it
        return text
    crash = ReprFileLocation(item.location[0], (item.location[1] or 0) + 1, text.splitlines()[0])
    return ExceptionChainRepr([(ReprTraceback([ReprEntryNative([text + "\n"])], None, "native"), crash, None)])


def short_report(error: ImageMissingError | ImageBuildError, settings: HermesSettings) -> str:
    """The report of a test that an image error stopped: the error's type and message, then
    where the image came from when this run's settings tell.

    :param error: the error that reached the test.
    :param settings: this run's settings (the image, and which setting named it).
    :returns: the report's text, a few lines.
    """
    origin = image_origin(error, settings)
    return f"{type(error).__name__}: {error}" + (f"\n{origin}" if origin else "")


def image_origin(error: ImageMissingError | ImageBuildError, settings: HermesSettings) -> str | None:
    """Where the image of ``error`` came from, as a sentence; ``None`` when the settings cannot tell."""
    from ..containers.images import KERNEL_HOST_TAG

    image = getattr(error, "image", None)
    if settings.image is not None and image == settings.image:
        return (f"The image {image} is named by {settings.sources['image']}; without that setting the "
                f"kit's own image, {KERNEL_HOST_TAG}, is used (built on first use).")
    if settings.image is None and image in (None, KERNEL_HOST_TAG):
        return (f"This is the kit's own image, {KERNEL_HOST_TAG}: no --hermes-image, PYTEST_HERMES_IMAGE or "
                "hermes_image names another. `hermes-kernel build-image` builds it from a shell, step by step; "
                "`hermes-kernel doctor` checks the docker engine.")
    if image is not None:
        return f"The image {image} was given to the transport (image=), not by --hermes-image."
    return None
