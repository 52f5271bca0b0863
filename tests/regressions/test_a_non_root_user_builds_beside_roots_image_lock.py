"""Seen (a non-root breaker helper, 2026-12-05): the image build lock was one file for every user,
``/tmp/pytest-hermes-kernel-image.lock``. Once a root run had made it (0644), every docker and ssh
test of another user errored with a bare ``PermissionError: [Errno 13] Permission denied:
'/tmp/pytest-hermes-kernel-image.lock'`` (the transports take the lock to check the kit's image
even when it is there), and the leak check of each said "not checked: docker ...: PermissionError".
The lock is now the user's own, in ``<tmp>/pytest-hermes-kernel-<uid>/``; a lock that still cannot
be opened is an ``ImageBuildError`` naming it."""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel.containers import images
from pytest_hermes_kernel.errors import ImageBuildError
from tests.nonroot import unprivileged_user

OLD_LOCK = "/tmp/pytest-hermes-kernel-image.lock"

ENSURE = """
from pytest_hermes_kernel.containers import images

images._ensure_locked = lambda client, tag, progress: tag  # the engine's part: not what this is about
print("IMAGE", images.ensure_image(object(), tag="hermes-test:nonroot", progress=print))
"""


def test_a_non_root_users_image_check_is_not_stopped_by_roots_lock_file() -> None:
    user = unprivileged_user()
    if os.geteuid() == 0 and not os.path.lexists(OLD_LOCK):
        with open(OLD_LOCK, "a", encoding="ascii"):  # as a root run of the old code left it (0644)
            pass
    ran = user.run(ENSURE, env={"TMPDIR": "/tmp"})
    assert ran.returncode == 0 and "IMAGE hermes-test:nonroot" in ran.stdout, ran.stdout + ran.stderr


def test_a_lock_that_cannot_be_opened_is_an_image_build_error_naming_it(tmp_path, monkeypatch) -> None:
    lock = tmp_path / "image.lock"
    lock.mkdir()  # a directory: no file lock opens it, whoever runs this (root too)
    monkeypatch.setattr(images, "_failed", {}, raising=False)
    monkeypatch.setattr(images, "_ensure_locked", lambda client, tag, progress: tag)
    with pytest.raises(ImageBuildError, match=f"cannot open the image build lock {lock}: "):
        images.ensure_image(object(), tag="hermes-test:nolock", lock_path=str(lock))  # type: ignore[arg-type]
