"""The numbers and interpreter a transport is made with, checked when it is made.

A transport's constructor took any value: ``connect_timeout=nan``, ``keepalive_interval=-1``,
``mem_limit_bytes=1.5``, ``max_servers=0``, ``hold_s=nan``, ``python=""``. Each failed later,
far from the call (at the first kernel's start, in docker's answer, in a wait), or never (a NaN
wait is no bound). :func:`check_options` refuses them with a
:class:`~pytest_hermes_kernel.errors.ConfigError` naming the transport, the option and the value,
as :class:`~pytest_hermes_kernel.kernel.options.KernelOptions` does for a kernel's options (and
with its bound on durations, :data:`~pytest_hermes_kernel.kernel.options.MAX_SECONDS`).

Owns: :func:`check_options`. May import: the kernel core's option checks and ``errors``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping

from ..errors import ConfigError
from ..kernel.options import MAX_SECONDS, is_seconds

__all__ = ["check_options"]


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _amount(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _command(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip()) and "\0" not in value


#: Each kind: the test a value passes, and what the message says it must be.
_KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "seconds": (lambda v: is_seconds(v, positive=False), f"a finite number of seconds >= 0 (at most {MAX_SECONDS:g})"),
    "positive_seconds": (lambda v: is_seconds(v, positive=True),
                         f"a finite number of seconds > 0 (at most {MAX_SECONDS:g})"),
    "counts": (_count, "an int >= 1"),
    "amounts": (_amount, "a finite number > 0"),
    "commands": (_command, "a non-empty interpreter path or command (no NUL)"),
}


def check_options(owner: str, *, optional: Collection[str] = (), **kinds: Mapping[str, object]) -> None:
    """Check each option by its kind: ``seconds``, ``positive_seconds``, ``counts`` (an int >= 1:
    sizes in bytes too), ``amounts`` (a finite number > 0, such as ``cpus``), ``commands`` (an
    interpreter), each a mapping of option name to value.

    :param owner: what the message names first (``"ssh transport"``).
    :param optional: the options that take ``None`` too (the default, or off).
    :raises ConfigError: naming the first option whose value is not of its kind.
    """
    for kind, values in kinds.items():
        test, what = _KINDS[kind]
        for name, value in values.items():
            if value is None and name in optional:
                continue
            if not test(value):
                none = " or None" if name in optional else ""
                raise ConfigError(f"{owner}: {name} must be {what}{none}, got {value!r}")
