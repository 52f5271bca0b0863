"""``get_transport(name, **options)`` hands out the shared instance only for the options it was made
with: a later call whose options differ raises a ``ConfigError`` that names each one with both
values, where the instance was made and what to do; a call without options, or with options
equal in effect (a default spelled out, a list for a tuple), gets the instance as it is.

The bug: the first call's options won in silence, so a conftest.py that called
``get_transport("docker")`` at import made the run ignore ``--hermes-image`` (and docker hosts,
ssh targets, reuse). Here on the real ``LocalTransport`` class under names of the test's own.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.transports import close_transport, get_transport, make_transport, register_transport
from pytest_hermes_kernel.transports.local import LocalTransport
from pytest_hermes_kernel.transports.local_server import DEFAULT_MAX_SERVERS

HERE = os.path.abspath(__file__)


@pytest.fixture
def registered() -> Iterator[Callable[[Callable[..., Transport]], str]]:
    """``registered(factory) -> name``: a transport name of this test's own; its shared instance is
    closed and dropped afterwards (registering a name again drops its shared instance)."""
    names: list[tuple[str, Callable[..., Transport]]] = []

    def register(factory: Callable[..., Transport]) -> str:
        name = f"opts-{uuid.uuid4().hex[:8]}"
        register_transport(name, factory)
        names.append((name, factory))
        return name

    yield register
    for name, factory in names:
        close_transport(get_transport(name))
        register_transport(name, factory)


def test_a_call_without_options_gets_the_shared_instance_whatever_it_was_made_with(registered):
    name = registered(LocalTransport)
    shared = get_transport(name, server=False)

    assert get_transport(name) is shared
    assert shared.server is False


def test_options_equal_in_effect_get_the_shared_instance(registered):
    name = registered(LocalTransport)
    shared = get_transport(name)

    assert get_transport(name, server=True) is shared  # the default, spelled out
    assert get_transport(name, python=None, max_servers=DEFAULT_MAX_SERVERS) is shared
    assert get_transport(name, server_idle_timeout=300) is shared  # 300 == 300.0, the default


def test_a_list_is_the_same_option_as_a_tuple_of_the_same_items(registered):
    def backend(*, targets: tuple[str, ...] = ()) -> Transport:
        return LocalTransport()

    name = registered(backend)
    shared = get_transport(name, targets=("a", "b"))

    assert get_transport(name, targets=["a", "b"]) is shared


def test_other_options_raise_naming_each_with_both_values_where_it_was_made_and_the_fix(registered):
    name = registered(LocalTransport)
    line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
    get_transport(name, max_servers=2)
    made_at = f"{HERE}:{line} (test_other_options_raise_naming_each_with_both_values_where_it_was_made_and_the_fix)"

    with pytest.raises(ConfigError) as caught:
        get_transport(name, server=False, max_servers=2)

    message = str(caught.value)
    assert message.startswith(f"get_transport('{name}', server=False, max_servers=2): the shared {name} "
                              f"transport of this process was already made, by {made_at}"), message
    assert "with max_servers=2, and these differ: server=False here, True (the default) there." in message
    assert "max_servers=2 here" not in message  # equal options are not listed
    assert f"make_transport('{name}', ...) for a transport of your own" in message
    assert f"get_transport('{name}') with the same options, or with none" in message


def test_the_shared_instance_is_unchanged_after_a_refused_call(registered):
    name = registered(LocalTransport)
    shared = get_transport(name)

    with pytest.raises(ConfigError):
        get_transport(name, server=False)

    assert get_transport(name) is shared and shared.server is True


def test_an_option_a_factory_takes_only_through_its_keywords_counts_as_given_or_not(registered):
    def backend(**options: Any) -> Transport:
        return LocalTransport()

    name = registered(backend)
    shared = get_transport(name, region="eu")

    assert get_transport(name, region="eu") is shared
    with pytest.raises(ConfigError, match=r"zone='a' here, not given there"):
        get_transport(name, region="eu", zone="a")


def test_values_of_options_whose_names_look_secret_are_not_shown(registered):
    def backend(*, api_token: str = "") -> Transport:
        return LocalTransport()

    name = registered(backend)
    get_transport(name, api_token="first-very-secret-value")

    with pytest.raises(ConfigError) as caught:
        get_transport(name, api_token="second-very-secret-value")

    message = str(caught.value)
    assert "api_token=[REDACTED] here, [REDACTED] there" in message
    assert "very-secret" not in message


def test_make_transport_is_the_way_to_other_options(registered):
    name = registered(LocalTransport)
    shared = get_transport(name)

    own = make_transport(name, server=False)
    try:
        assert own is not shared and own.server is False
    finally:
        close_transport(own)


def test_a_bad_option_is_a_config_error_as_with_make_transport(registered):
    name = registered(LocalTransport)

    with pytest.raises(ConfigError, match=f"bad option for the {name} transport: .*no_such_option"):
        get_transport(name, no_such_option=1)



REREGISTER_SCRIPT = """
import sys

from pytest_hermes_kernel.transports import get_transport, register_transport
from pytest_hermes_kernel.transports.local import LocalTransport

log = sys.argv[1]

def made(tag):
    class Recorded(LocalTransport):
        def close(self):
            with open(log, "a") as f:
                f.write(tag + "\\n")
            super().close()
    return Recorded

register_transport("mine", made("first"))
first = get_transport("mine")
register_transport("mine", made("second"))
assert get_transport("mine") is not first
with open(log, "a") as f:
    f.write("registered again\\n")
"""


def test_a_shared_instance_replaced_by_registering_its_name_again_is_still_closed_at_exit(tmp_path):
    """Registering a name again stops handing out its shared instance; that instance is closed
    at exit with the shared transports, not dropped unclosed (its containers and connections
    outlived the process), and not at once (its kernels may still run on it)."""
    log = tmp_path / "closed.log"
    done = subprocess.run([sys.executable, "-c", REREGISTER_SCRIPT, str(log)], capture_output=True, text=True,
                          timeout=60)

    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert lines[0] == "registered again", "the replaced instance was closed while its kernels may run"
    assert sorted(lines[1:]) == ["first", "second"], lines


@pytest.mark.parametrize("value", ["no", "false", 0, None])
def test_a_flag_option_must_be_a_bool(value):
    """``server="no"`` (from a marker or a conftest) is truthy: it chose the kernel server in silence."""
    with pytest.raises(ConfigError, match=r"local transport: server must be True or False, got"):
        make_transport("local", server=value)
    transport = make_transport("local", server=False)
    try:
        assert transport.server is False
    finally:
        transport.close()
