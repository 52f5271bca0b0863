"""A docker engine URL that names no engine (a port out of range or not a number, a tcp URL
without its port, an IPv6 address without its closing bracket) is a usage error saying the URL is
bad: ``pytest --hermes-transport=docker --hermes-docker-hosts=tcp://127.0.0.1:99999`` skipped
every docker test with 'the docker engine ... did not answer: Port out of range' and the hint to
start dockerd (exit status 0), and ``hermes-kernel doctor --docker-hosts 'tcp://[::1'`` was a
``ValueError: Invalid IPv6 URL`` traceback."""

from __future__ import annotations

import re

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers.engines import check_engine_url, parse_engine_list
from pytest_hermes_kernel.errors import ConfigError

BAD = ["tcp://127.0.0.1:99999", "tcp://127.0.0.1:0", "tcp://127.0.0.1:abc", "tcp://127.0.0.1", "https://engine",
       "tcp://[::1", "tcp://[::1]"]
GOOD = ["default", "unix:///var/run/docker.sock", "tcp://127.0.0.1:2375", "tcp://[::1]:2375", "https://engine:2376",
        "http://localhost:2375", "tcp://:2375"]


@pytest.mark.parametrize("url", BAD)
def test_an_engine_url_that_names_no_engine_is_refused_as_a_bad_url(url: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"bad docker engine URL {url!r}")):
        check_engine_url(url)
    with pytest.raises(ConfigError, match="bad docker engine URL"):
        parse_engine_list(f"default,{url}")


@pytest.mark.parametrize("url", GOOD)
def test_an_engine_url_docker_reaches_is_taken(url: str) -> None:
    assert check_engine_url(url) == url


@pytest.mark.parametrize("url", ["tcp://[::1", "tcp://127.0.0.1:99999"])
def test_the_commands_say_a_bad_engine_url_is_bad_in_their_usage_error(url: str,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["doctor", "docker", "--docker-hosts", url])

    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert f"hermes-kernel doctor: error: bad docker engine URL {url!r}" in err, err
