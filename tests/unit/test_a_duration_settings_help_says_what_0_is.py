"""Every plugin setting in seconds reads ``0`` as ``none`` (``--hermes-idle-timeout=0``: never
reaped), but ``--help`` said so only for ``--hermes-reuse-idle-timeout``: ``--hermes-idle-timeout``
said "idle reap timeout in seconds", and a user who gave 0, as ``KernelRegistry(idle_timeout=0)``
takes it (reap a kernel as soon as it is idle), got kernels that were never reaped; the
``--hermes-timeout`` help said "none: no limit", not 0 (a docstring check, 2026-12-06)."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.plugin import settings

IN_SECONDS = [s for s in settings.SETTINGS if s.parse is settings._seconds]


def test_the_settings_in_seconds_are_found():
    assert {s.name for s in IN_SECONDS} >= {"timeout", "idle_timeout", "leak_grace", "reuse_idle_timeout"}


@pytest.mark.parametrize("setting", IN_SECONDS, ids=lambda s: s.flag)
def test_a_duration_settings_help_says_what_0_is(setting):
    assert setting.parse("0") is None and setting.parse("none") is None
    assert "none or 0:" in setting.help, f"{setting.flag}: {setting.help}"
