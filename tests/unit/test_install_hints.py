"""The hints that say how to add a missing extra name the install the user has. README installs the
package from a checkout (``pip install -e '.[dev]'``, or ``pip install '/path/to/checkout[docker,ssh]'``:
it is not on PyPI), yet ``hermes-kernel doctor``, ``build-image`` and a skipped docker or ssh leg said
``pip install 'pytest-hermes-kernel[docker]'``, which asks PyPI for a package of that name. A new user
with a plain ``pip install /path/to/checkout`` (no extras) got that hint on 2026-12-05. Now the hint
names the directory the package came from (its PEP 610 ``direct_url.json``), ``-e`` if it was
editable; only a package from an index gets the name. A transport of one's own whose factory failed
an import was told ``pip install 'pytest-hermes-kernel[mine]'``, an extra that does not exist."""

from __future__ import annotations

import importlib.metadata
import json
import sys
import uuid
from typing import Any

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers.images import pip_install_extra
from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.transports import make_transport, register_transport


class FakeDist:
    """The installed distribution, with ``direct_url.json`` as given (``None``: none)."""

    def __init__(self, real: Any, direct_url: dict[str, Any] | None) -> None:
        self.real, self.direct_url = real, direct_url

    def read_text(self, name: str) -> str | None:
        if name != "direct_url.json":
            return self.real.read_text(name)
        return json.dumps(self.direct_url) if self.direct_url is not None else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def installed_from(monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, Any] | None) -> None:
    real = importlib.metadata.distribution
    monkeypatch.setattr(importlib.metadata, "distribution",
                        lambda name: FakeDist(real(name), direct_url) if name == "pytest-hermes-kernel" else real(name))


@pytest.mark.parametrize(("direct_url", "command"), [
    ({"url": "file:///home/me/pytest-hermes-kernel", "dir_info": {}},
     "pip install '/home/me/pytest-hermes-kernel[docker]'"),
    ({"url": "file:///home/me/my%20checkout", "dir_info": {"editable": True}},
     "pip install -e '/home/me/my checkout[docker]'"),
    (None, "pip install 'pytest-hermes-kernel[docker]'"),  # from an index: no direct_url.json
], ids=["checkout", "editable", "index"])
def test_the_command_names_where_the_package_came_from(monkeypatch, direct_url, command) -> None:
    installed_from(monkeypatch, direct_url)
    assert pip_install_extra("docker") == command


def test_doctor_without_the_docker_sdk_gives_the_checkouts_command(monkeypatch, capsys) -> None:
    installed_from(monkeypatch, {"url": "file:///srv/checkout", "dir_info": {}})
    monkeypatch.setitem(sys.modules, "docker", None)  # `import docker` raises ImportError
    monkeypatch.setitem(sys.modules, "paramiko", None)

    assert main(["doctor", "docker", "ssh"]) == 1

    out = capsys.readouterr().out
    assert "Hint: pip install '/srv/checkout[docker]' (the docker SDK), then run `hermes-kernel doctor` again" in out
    assert "Hint: pip install '/srv/checkout[ssh]'" in out
    assert "pytest-hermes-kernel[" not in out, out
    docker_line = out.split("\nssh")[0]
    assert docker_line.count("Hint:") == 1, docker_line  # it said the same install twice, on two lines


def test_a_transport_of_ones_own_that_fails_an_import_is_not_sent_to_an_extra(monkeypatch) -> None:
    def factory(**options: Any) -> Any:
        import no_such_backend_sdk  # noqa: F401

    name = f"mine-{uuid.uuid4().hex[:8]}"
    register_transport(name, factory)

    with pytest.raises(TransportUnavailableError) as caught:
        make_transport(name)

    text = str(caught.value)
    assert "No module named 'no_such_backend_sdk'" in text and "Hint: install what" in text, text
    assert f"pytest-hermes-kernel[{name}]" not in text, text


def test_build_images_tag_option_says_what_it_is(capsys) -> None:
    """``hermes-kernel build-image --help`` listed ``--tag TAG`` with no words at all."""
    with pytest.raises(SystemExit):
        main(["build-image", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--tag TAG the image's name (default: hermes-kernel-host:latest" in help_text, help_text
