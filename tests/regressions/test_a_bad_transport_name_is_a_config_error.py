"""Seen: ``get_transport(["local"])`` (a list where a name goes, e.g. a matrix passed whole) raised
a bare ``TypeError: unhashable type: 'list'`` from the factory table, and ``start_kernel(None)``
an ``AttributeError: 'NoneType' object has no attribute 'launch'``: neither a ConfigError nor a
word about the known transports. A user's near miss (``"Docker"``, ``" ssh"``, ``"file-cell"``,
``"filecell:"``) was a ConfigError, without the name it was close to.

Now every bad name is a :class:`ConfigError` that lists the known transports, with the closest
one when there is one, on every entry point that takes a name.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import ConfigError, start_kernel
from pytest_hermes_kernel.transports import get_transport, make_transport, transport_factory

KNOWN = "local, docker, ssh, filecell"
ENTRY_POINTS = [get_transport, make_transport, transport_factory, start_kernel]


@pytest.mark.parametrize("call", ENTRY_POINTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("name", "meant"), [("Docker", "docker"), (" ssh", "ssh"), ("file-cell", "filecell"),
                                             ("filecell:", "filecell"), ("LOCAL", "local")])
def test_a_near_miss_names_the_transport_it_is_close_to(call, name, meant):
    with pytest.raises(ConfigError) as exc:
        call(name)

    assert f"did you mean {meant!r}?" in str(exc.value)
    assert f"known: {KNOWN}" in str(exc.value)


@pytest.mark.parametrize("call", ENTRY_POINTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", [["local"], {"local"}, {"transport": "local"}, None, 3, b"local"],
                         ids=["list", "set", "dict", "None", "int", "bytes"])
def test_a_name_that_is_no_str_is_a_config_error(call, name):
    with pytest.raises(ConfigError, match=f"a transport name is a str, not {type(name).__name__} .*; known: {KNOWN}"):
        call(name)


def test_a_long_name_is_shortened_in_the_message():
    with pytest.raises(ConfigError) as exc:
        get_transport("x" * 10_000)

    message = str(exc.value)  # the known names may include ones other tests of this process registered
    assert message.startswith("unknown transport '" + "x" * 56 + "... (known: "), message
    assert "x" * 57 not in message
    assert f"known: {KNOWN}" in message


def test_a_transport_class_is_told_to_pass_an_instance():
    """``start_kernel(LocalTransport)`` said only ``a transport name is a str, not ABCMeta`` (found by a
    breaker helper on 2026-12-05): the class, where an instance or a name goes."""
    from pytest_hermes_kernel.transports.local import LocalTransport

    with pytest.raises(ConfigError, match=r"not the class LocalTransport: pass an instance, LocalTransport\(\.\.\.\)"):
        start_kernel(LocalTransport)


def test_shared_transport_given_a_name_says_it_takes_a_key():
    """``shared_transport("local")`` (the registry's default factory, called by hand) was a bare
    ``AttributeError: 'str' object has no attribute 'transport'``."""
    from pytest_hermes_kernel.api import shared_transport

    with pytest.raises(TypeError, match=r"shared_transport\(\) takes a KernelKey, not str 'local': get_transport\(name\)"):
        shared_transport("local")


def test_a_registry_whose_default_transport_is_misspelt_is_refused_when_made():
    """``KernelRegistry(transport="dockr")`` was taken; its first cell failed."""
    from pytest_hermes_kernel import KernelRegistry

    with pytest.raises(ConfigError, match=f"did you mean 'docker'\\?.*known: {KNOWN}"):
        KernelRegistry(transport="dockr")
