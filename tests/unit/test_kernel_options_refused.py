"""Kernel options that would be read wrongly are refused with a ConfigError naming the option,
before anything starts (found by the breaker session): ``auto_restart="no"`` was true, and a path
with a NUL raised a bare ``ValueError: embedded null byte`` from the local launch (docker: a
``KernelStartError`` after a launch)."""

from __future__ import annotations

import re

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.kernel.options import KernelOptions


@pytest.mark.parametrize("option, value", [
    ("auto_restart", "no"), ("inherit_env", 0), ("report_running", "yes"),
    ("cwd", "/tmp/\0x"), ("python", "pyth\0on"),
    # a fresh-install helper: a bare string passed nothing through (its letters were the names),
    # "x" failed at the first timeout with an AttributeError, and 0 made every start fail
    ("env_allow", "GITHUB_TOKEN"), ("watchdog", "x"), ("start_timeout", 0),
    # 0 declared every channel lost after keepalive_interval of quiet, without a ping: a healthy
    # docker or ssh kernel re-attached in each quiet cell, which said reconnected=True (a breaker helper)
    ("keepalive_missed", 0),
])
def test_an_option_read_wrongly_is_refused(option, value):
    with pytest.raises(ConfigError, match=option):
        KernelOptions(**{option: value})
    with pytest.raises(ConfigError, match=option):
        start_kernel("local", **{option: value})


@pytest.mark.parametrize("value, says", [
    ("GITHUB_TOKEN", "a str is no list: env_allow=['GITHUB_TOKEN']"),
    ([1, "HOME"], "each name a string, not 1"),  # it said to write env_allow=[[1, 'HOME']]
])
def test_a_bad_env_allow_is_told_what_to_write(value, says):
    with pytest.raises(ConfigError) as caught:
        KernelOptions(env_allow=value)
    assert says in str(caught.value), str(caught.value)
    assert "[[" not in str(caught.value), str(caught.value)


def test_the_flags_and_paths_as_meant_pass():
    options = KernelOptions(auto_restart=False, inherit_env=True, report_running=False, cwd="/tmp", python="python3")
    assert options.auto_restart is False and options.cwd == "/tmp"
    assert KernelOptions(env_allow=["GITHUB_TOKEN"]).env_allow == ("GITHUB_TOKEN",)


@pytest.mark.parametrize("values, says", [
    ({"timeot": 5}, "unknown field 'timeot' of KernelOptions; did you mean 'timeout'?"),
    ({"watchdog": {"interupt_grace": 1}}, "unknown field 'interupt_grace' of WatchdogPolicy; did you mean "
                                          "'interrupt_grace'?"),
])
def test_a_misspelled_option_is_refused_with_the_closest_name(values, says):
    """It was a bare ``TypeError: KernelOptions.__init__() got an unexpected keyword argument``
    (start_kernel, a scenario's ``[kernel]`` table, a ``watchdog`` dict)."""
    with pytest.raises(ConfigError, match=re.escape(says)):
        start_kernel("local", **values)



@pytest.mark.parametrize("transport, values", [
    ("local", {"server": False}), ("docker", {"container": "fresh", "timeout": 5}),
])
def test_a_transport_option_given_to_start_kernel_says_where_it_goes(transport, values):
    """``start_kernel("local", server=False)``, the README's spawn path written the short way, was
    refused as an ``unknown field 'server' of KernelOptions`` with the list of kernel options and
    no word of where ``server`` goes; now the hint says it is the transport's and how to pass it."""
    name = next(k for k in values if k != "timeout")
    with pytest.raises(ConfigError, match=re.escape(f"unknown field {name!r} of KernelOptions")) as caught:
        start_kernel(transport, **values)
    said = str(caught.value)
    assert f"Hint: {name}= is an option of the {transport} transport, not of the kernel" in said, said
    assert f"start_kernel(make_transport({transport!r}, {name}={values[name]!r}), ...)" in said, said


@pytest.mark.parametrize("value", [None, 5])
def test_an_env_allow_that_is_no_list_is_a_config_error(value):
    # KernelOptions' docstring: ":raises ConfigError: if a field is ... of the wrong type"; None
    # and 5 raised a bare "TypeError: 'NoneType' object is not iterable" (a docstring check, 2026-12-06)
    with pytest.raises(ConfigError, match="env_allow must be a list of variable names"):
        KernelOptions(env_allow=value)


def test_an_env_allow_given_as_a_generator_keeps_its_names():
    # the type check read the generator up, and the option kept no name: env_allow == ()
    assert KernelOptions(env_allow=(n for n in ["GITHUB_TOKEN"])).env_allow == ("GITHUB_TOKEN",)
