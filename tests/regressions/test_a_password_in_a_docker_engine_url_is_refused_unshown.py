"""A password in a docker engine URL showed in every message that named the engine.

docker-py takes no password in an engine URL (``tcp://u:PW@host:2375``: "Invalid bind address
format"), but ``--hermes-docker-hosts`` took one, and each docker leg was skipped with
``the docker engine at tcp://u:PW@127.0.0.1:2375 did not answer: Invalid bind address format:
tcp://u:PW@...``; so did ``hermes-kernel doctor`` and a ``DOCKER_HOST`` holding one. Such a URL is
refused now (``ConfigError``), the password masked, and an engine that does not answer is named
masked.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import ConfigError
from pytest_hermes_kernel.containers.engines import check_engine_url, engine_client
from pytest_hermes_kernel.errors import TransportUnavailableError

PASSWORD = "engine-" + "canary-pw-5d"
URL = f"tcp://admin:{PASSWORD}@127.0.0.1:1"


def test_an_engine_url_with_a_password_is_refused_masked():
    with pytest.raises(ConfigError) as refused:
        check_engine_url(URL)
    assert PASSWORD not in str(refused.value) and "tcp://admin:[REDACTED]@127.0.0.1:1" in str(refused.value)


def test_a_docker_host_with_a_password_is_named_masked(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", URL)
    with pytest.raises(TransportUnavailableError) as unavailable:
        engine_client(None)
    assert PASSWORD not in str(unavailable.value) and "[REDACTED]" in str(unavailable.value), str(unavailable.value)


def test_the_run_refuses_it_masked(pytester: pytest.Pytester):
    pytester.makepyfile(test_d="def test_t(hermes_kernel):\n    hermes_kernel.execute('1')\n")

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", "--hermes-transport=docker",
                                           f"--hermes-docker-hosts={URL}")

    text = "\n".join(result.outlines + result.errlines)
    assert result.ret != 0 and "holds no password" in text and PASSWORD not in text, text[-2000:]
