"""``KernelHandle`` and ``KernelRegistry`` given the wrong kind of argument (a transport's name
where a ``Transport`` goes, a dict where ``KernelOptions`` go, a list of tools) raise a
``TypeError`` that shows the right form, when they are made.

``KernelHandle("local")`` was made, and failed at its start with ``AttributeError: 'str' object
has no attribute 'launch'`` (its ``repr`` too); ``KernelHandle(t, {"timeout": 5})`` with
``AttributeError: 'dict' object has no attribute 'env'``. ``KernelRegistry(options={...})`` was
made and failed at every acquire (``'dict' object has no attribute 'python'``) and again in its
``close()`` at interpreter exit.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelHandle, KernelRegistry
from pytest_hermes_kernel.transports import get_transport


def test_a_handle_on_a_transport_name_shows_how_to_start_one() -> None:
    with pytest.raises(TypeError, match=r"a Transport.*start_kernel\('local'\)"):
        KernelHandle("local")


@pytest.mark.parametrize("options", [{"timeout": 5}, {}, "timeout=5"])
def test_a_handle_or_registry_with_options_that_are_no_kernel_options_says_so(options) -> None:
    with pytest.raises(TypeError, match=r"options must be a KernelOptions, e\.g\. KernelOptions\(timeout=5"):
        KernelHandle(get_transport("local"), options)
    with pytest.raises(TypeError, match=r"options must be a KernelOptions"):
        KernelRegistry(options=options, background_reaper=False)


def test_tools_that_are_no_mapping_say_so() -> None:
    with pytest.raises(TypeError, match=r"tools must be a dict of name: callable, e\.g\. tools=\{'print': print\}"):
        KernelHandle(get_transport("local"), tools=[print])
