"""What each shared transport was made with, and the check that a later call asks for the same.

:func:`~pytest_hermes_kernel.transports.get_transport` makes one transport per name and process,
with the options of its first call, and hands that instance to every later call. A later call
that passes options is checked against it here: both calls' options are *resolved* against the
name's factory (its signature's defaults filled in, so a default passed explicitly is the same
option; a list the same as a tuple of the same items) and compared by ``==``. Equal ones get the
shared instance; a call whose options differ gets a :class:`~pytest_hermes_kernel.errors.ConfigError`
naming each option that differs with both values, the call that made the instance and what to
do instead. A call without options always gets the instance as it is (the common use).

Why: the first call's options used to win in silence. A conftest.py that called
``get_transport("docker")`` at import made the docker transport before the plugin's fixtures
asked for it with the run's ``--hermes-image`` (or docker hosts, ssh targets, reuse), and the
run then ran on the conftest's transport: the option did nothing.

Values a factory turns into the same thing but that compare unequal (``docker_hosts=("default",)``
and none, ``run_id`` spelled out and left to the run's) count as different: the message shows
both, and passing the same options or none fixes it.

Owns: :class:`SharedTransport` and :func:`check_flags`. May import: the kernel core (its port, the redaction of
:mod:`~pytest_hermes_kernel.kernel.output`) and ``errors``.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import ConfigError
from ..kernel.contract import Transport
from ..kernel.output import REDACTED, is_secret_name, redact

__all__ = ["SharedTransport", "check_flags", "resolve_options"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_PLUGIN = os.path.join(_PACKAGE, "plugin") + os.sep
_UNSET = object()  # an option one call's factory takes through ``**options`` and the other did not pass
_SHOWN_CHARS = 120  # of a value in the message: a backend object's repr can be long


@dataclass(frozen=True, eq=False)
class SharedTransport:
    """One shared transport and what it was made with.

    :param transport: the instance every ``get_transport(name)`` of this process gets.
    :param options: the making call's options resolved against its factory (:func:`resolve_options`).
    :param given: the options as that call passed them.
    :param made_by: where that call was made: ``file:line (function)`` of the first caller outside
        this package, the plugin's modules counting as outside (``.../plugin/fixtures.py:223
        (hermes_transport)``), so a user's own call names the user's line.
    """

    transport: Transport
    options: Mapping[str, Any]
    given: Mapping[str, Any]
    made_by: str

    @classmethod
    def made(cls, transport: Transport, factory: Callable[..., Transport], given: Mapping[str, Any]) -> SharedTransport:
        """Record ``transport``, just made by ``factory(**given)`` (call it from the making call)."""
        return cls(transport, MappingProxyType(resolve_options(factory, given)), MappingProxyType(dict(given)),
                   _call_site())

    def check(self, name: str, factory: Callable[..., Transport], options: Mapping[str, Any]) -> None:
        """Whether a later ``get_transport(name, **options)`` may have this instance.

        :param name: the transport's name.
        :param factory: the name's factory (the one that made the instance: a new one replaces it).
        :param options: the later call's options; none always may.
        :raises ConfigError: if ``options`` resolved differ from those the instance was made with
            (the message names each one with both values, the making call, and the fix).
        """
        if not options:
            return
        asked = resolve_options(factory, options)
        differ = [k for k in dict.fromkeys([*self.options, *asked])
                  if not _same(asked.get(k, _UNSET), self.options.get(k, _UNSET))]
        if differ:
            raise ConfigError(redact(self._mismatch(name, options, asked, differ)))

    def _mismatch(self, name: str, options: Mapping[str, Any], asked: Mapping[str, Any], differ: list[str]) -> str:
        what = "; ".join(f"{k}={_show(k, asked.get(k, _UNSET), k in options)} here, "
                         f"{_show(k, self.options.get(k, _UNSET), k in self.given)} there" for k in differ)
        made_with = _call(self.given) or "no options"
        return (f"get_transport({name!r}, {_call(options)}): the shared {name} transport of this process was "
                f"already made, by {self.made_by} with {made_with}, and these differ: {what}. get_transport() "
                f"makes one instance per name and process, with its first call's options, and never remakes "
                f"it. Hint: call get_transport({name!r}) with the same options, or with none for the shared one "
                f"as it is, or make_transport({name!r}, ...) for a transport of your own (you close it). Under "
                f"pytest, take the hermes_transport fixture's transport (it passes the run's --hermes-* options) "
                f"instead of making the shared one before it (at conftest.py import, or in a fixture that runs "
                f"first).")


def resolve_options(factory: Callable[..., Transport], options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as ``factory`` takes them: every parameter of its signature, given or default,
    plus what its ``**options`` receives; lists as tuples. A factory without a readable signature,
    or options it does not take (its call says which), gives ``options`` as they are."""
    try:
        signature = inspect.signature(factory)
        bound = signature.bind(**options)
    except (TypeError, ValueError):
        return {k: _plain(v) for k, v in options.items()}
    bound.apply_defaults()
    resolved: dict[str, Any] = {}
    for key, value in bound.arguments.items():
        kind = signature.parameters[key].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            resolved.update(value)
        elif kind is not inspect.Parameter.VAR_POSITIONAL:
            resolved[key] = value
    return {k: _plain(v) for k, v in resolved.items()}


def _plain(value: Any) -> Any:
    """A list as a tuple, inside too (factories take any sequence: ``targets=[...]`` or ``(...)``)."""
    return tuple(_plain(v) for v in value) if isinstance(value, (list, tuple)) else value


def _same(one: Any, other: Any) -> bool:
    if one is other:
        return True
    try:
        return bool(one == other)
    except Exception:  # noqa: BLE001 - a value whose == raises or has no truth (an array) counts as different
        return False


def _show(key: str, value: Any, given: bool) -> str:
    if value is _UNSET:
        return "not given"
    shown = REDACTED if is_secret_name(key) else _short(value)
    return shown if given else f"{shown} (the default)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS - 3]}..."


def _call(options: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={REDACTED if is_secret_name(k) else _short(v)}" for k, v in options.items())


def _call_site() -> str:
    """``file:line (function)`` of the first caller outside this package, the plugin excepted."""
    frame = inspect.currentframe()
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_PACKAGE) or path.startswith(_PLUGIN):
            return f"{path}:{frame.f_lineno} ({frame.f_code.co_name})"
        frame = frame.f_back
    return "an unknown caller"


def check_flags(name: str, factory: Callable[..., Transport], options: dict[str, Any]) -> None:
    """Refuse a non-bool value for an option the factory declares ``bool`` (``server="no"`` is
    truthy: it silently chose the kernel server).

    :raises ConfigError: if such an option is not ``True`` or ``False``.
    """
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a callable without a signature: nothing to check
        return
    for key, value in options.items():
        param = params.get(key)
        if param is not None and param.annotation in ("bool", bool) and not isinstance(value, bool):
            raise ConfigError(f"bad option for the {name} transport: {key} must be True or False, got {value!r}")
