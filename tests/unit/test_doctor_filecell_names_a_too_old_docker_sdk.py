"""Seen by a new user with docker-py 7.0.0 installed (a later ``pip install`` downgraded it):
``hermes-kernel doctor`` said ``docker NO too old: docker 7.0.0 (docker>=7.1 needed)``, and on the
next line ``filecell ok ... docker exec backend when docker is up``, while docker was up: that SDK
talks to no engine (beside requests 2.32), so the docker exec backend could not run either. Now the
filecell line says so, with the upgrade, as it names a missing SDK."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import cli
from pytest_hermes_kernel.containers import engines


def test_the_filecell_line_names_the_old_sdk_and_its_upgrade(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("docker")
    monkeypatch.setattr(engines, "too_old", lambda *names: ["docker 7.0.0 (docker>=7.1 needed)"] if "docker" in names else [])
    check = cli.doctor(["filecell"])[0]
    assert check.detail.endswith("docker exec backend cannot run: too old: docker 7.0.0 (docker>=7.1 needed): "
                                 "pip install -U 'docker>=7.1'"), check.detail
    assert "when docker is up" not in check.detail, check.detail


def test_with_the_declared_sdk_it_says_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("docker")
    monkeypatch.setattr(engines, "too_old", lambda *names: [])
    check = cli.doctor(["filecell"])[0]
    assert check.ok and check.detail.endswith("docker exec backend when docker is up"), check.detail
