"""A misspelled ``hermes_*`` ini key, or ``PYTEST_HERMES_*`` environment variable, is a usage error
with a did-you-mean, as a misspelled marker is.

pytest only warns about an unknown ini key ("Unknown config option: hermes_timout", in the
warnings summary after the run), so the setting silently kept its default: a CI run with
``hermes_timout = 5`` ran every cell under the 60 s default. This plugin reads the keys of the
configuration file pytest chose (``config.inipath``) and of ``-o``/``--override-ini``, and stops
the run at configure time when a ``hermes_*`` key among them is registered by no plugin.
``-p no:pytest_hermes_kernel.plugin.ini_keys`` turns the check off.

The file is read again here because pytest offers no public list of the keys it holds
(``config.inicfg`` is deprecated since pytest 9); the tables read are the ones pytest reads
(``[pytest]``, ``[tool:pytest]`` in ``setup.cfg``, ``[tool.pytest.ini_options]`` and
``[tool.pytest]`` in ``pyproject.toml``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from .markers import did_you_mean

PREFIX = "hermes_"


def file_keys(path: Path) -> set[str]:
    """The keys of pytest's tables in the configuration file ``path``; ``set()`` if it cannot be
    read (pytest reports a file it cannot parse itself)."""
    try:
        return _toml_keys(path) if path.suffix == ".toml" else _ini_keys(path)
    except (OSError, ValueError):  # tomllib.TOMLDecodeError is a ValueError; iniconfig.ParseError is caught below
        return set()


def _toml_keys(path: Path) -> set[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    table = data.get("tool", {}).get("pytest", {}) if path.name == "pyproject.toml" else data.get("pytest", {})
    return set(table) | set(table.get("ini_options", {}))


def _ini_keys(path: Path) -> set[str]:
    import iniconfig

    try:
        ini = iniconfig.IniConfig(str(path))
    except iniconfig.ParseError:
        return set()
    return {key for section in ("pytest", "tool:pytest") if section in ini for key, _ in ini[section].items()}


def unknown_keys(config: pytest.Config) -> dict[str, str]:
    """``{key: where}`` for each ``hermes_*`` key in the ini file or ``-o`` that no plugin registered."""
    found: dict[str, str] = {}
    if config.inipath is not None:
        found.update(dict.fromkeys(file_keys(Path(config.inipath)), f"in {config.inipath}"))
    for override in getattr(config.option, "override_ini", None) or ():
        found[override.partition("=")[0].strip()] = "from -o"
    return {key: where for key, where in sorted(found.items())
            if key.startswith(PREFIX) and not _registered(config, key)}


def _registered(config: pytest.Config, key: str) -> bool:
    try:
        config.getini(key)
    except ValueError:  # "unknown configuration value"
        return False
    except (TypeError, pytest.UsageError):  # registered: a native TOML value of another type (settings reads it)
        return True
    return True


def _known(config: pytest.Config) -> list[str]:
    from .settings import SETTINGS

    return [f"{PREFIX}{s.name}" for s in SETTINGS]


def known_env() -> set[str]:
    """Every ``PYTEST_HERMES_*`` variable something reads: the settings', the local kernel dir
    root's and the base image build's Debian mirror's."""
    from ..containers.base_image import MIRROR_ENV
    from ..transports.kernel_dirs import KERNEL_DIR_ENV
    from .settings import SETTINGS

    return {s.env for s in SETTINGS} | {KERNEL_DIR_ENV, MIRROR_ENV}


def unknown_env(environ: dict[str, str]) -> list[str]:
    """The ``PYTEST_HERMES_*`` variables set in ``environ`` that nothing reads (a typo such as
    ``PYTEST_HERMES_TRANSPORTS=docker`` ran the leg on the default, ``local``)."""
    from .settings import SETTINGS

    named = {s.env for s in SETTINGS}
    maybe = [name for name in environ if name.startswith("PYTEST_HERMES_") and name not in named]
    if not maybe:  # the usual case: the modules of the other variables stay unimported
        return []
    known = known_env()
    return sorted(name for name in maybe if name not in known)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """:raises pytest.UsageError: naming each unknown ``hermes_*`` key or ``PYTEST_HERMES_*``
    variable, where it is, and the closest known one."""
    if hasattr(config, "workerinput"):  # the xdist controller has stopped the run already
        return
    lines = []
    unknown = unknown_keys(config)
    if unknown:
        known = _known(config)
        lines += [f"pytest-hermes-kernel: unknown ini key {key} ({where}){did_you_mean(key, known)}"
                  for key, where in unknown.items()]
        lines.append(f"known hermes_* keys: {', '.join(known)}")
    env = unknown_env(dict(os.environ))
    if env:
        names = sorted(known_env())
        lines += [f"pytest-hermes-kernel: unknown environment variable {name}{did_you_mean(name, names)}"
                  for name in env]
        lines.append(f"known PYTEST_HERMES_* variables: {', '.join(names)}")
    if lines:
        raise pytest.UsageError("\n".join(lines))
