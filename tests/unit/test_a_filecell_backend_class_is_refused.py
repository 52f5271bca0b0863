"""``FileCellTransport(SubprocessSandbox)``, the class where an instance belongs, is refused at once.

A class has a callable ``execute``, so it was taken; every contract case then failed with a long
``KernelStartError`` whose hint said "the backend's execute raised instead of returning", which
points at the method, not at the missing ``()`` (a fresh install's stumble).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.transports import FileCellTransport
from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend


def test_a_backend_class_is_refused_saying_to_pass_an_instance():
    with pytest.raises(ConfigError, match=r"is a class: pass an instance, LocalShellBackend\(\)"):
        FileCellTransport(LocalShellBackend)  # type: ignore[arg-type]


def test_an_object_without_execute_is_still_refused_naming_the_method():
    with pytest.raises(ConfigError, match=r"has no execute\(cmd, timeout\) method"):
        FileCellTransport(object())  # type: ignore[arg-type]
