"""``register_transport(name, factory)`` refuses, at once and registering nothing, a name no
``--hermes-transport`` can name and a factory that cannot be called. Seen: ``"my,local"`` was
registered, and ``--hermes-transport=my,local`` said "unknown transport 'my' ... known: ...,
my,local"; a factory ``"notcallable"`` was registered, and ``start_kernel("x")`` said "bad option
for the x transport: 'str' object is not callable"."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import ConfigError
from pytest_hermes_kernel.transports import LocalTransport, register_transport, transport_names


@pytest.mark.parametrize("name", ["my,local", "", "two words", "leg[1]", 3])
def test_a_name_no_transport_option_could_name_is_refused(name: object) -> None:
    before = transport_names()
    with pytest.raises(ConfigError, match="a transport name is a word of letters, digits"):
        register_transport(name, LocalTransport)  # type: ignore[arg-type]
    assert transport_names() == before


def test_a_factory_that_cannot_be_called_is_refused() -> None:
    before = transport_names()
    with pytest.raises(TypeError, match=r"factory must be a callable \*\*options -> Transport"):
        register_transport("uncallable-leg", "LocalTransport")  # type: ignore[arg-type]
    assert transport_names() == before
