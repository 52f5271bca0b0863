"""The ssh transport over several hosts (``--hermes-ssh-targets``): kernels spread by load.

:class:`SshTargets` holds one :class:`~.transport.SshTransport` per target (each with its own
connection, kernel server, made-dirs record and leak probe) and places each new kernel on the
target with the fewest live kernels of this process (:class:`~..spread.Spread`); the kernel's
label (``ssh user@host:port pid N``), its first result's ``kernel.note`` and its kept record's
locator name its target.

:func:`ssh_transport` is the ``ssh`` name's factory: ``targets`` with two or more entries gives an
:class:`SshTargets`, one a plain :class:`~.transport.SshTransport` on it, none the sshd container.
A transport with a fault proxy on its TCP path (``connect_via``: ``hermes_transport_drop``) has
one proxy to cut, so it runs on the first target only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar

from ...containers.engines import refuse_too_old
from ...errors import ConfigError
from ...kernel.contract import Transport
from ..spread import Spread, factory_signature
from .address import SshTarget
from .transport import SshTransport

__all__ = ["SshTargets", "parse_targets", "ssh_transport"]


def parse_targets(text: str) -> tuple[str, ...]:
    """``user@host:port`` entries of a comma list, each checked, in order.

    :raises ConfigError: if an entry is not a target, or one is named twice.
    """
    targets = tuple(str(SshTarget.parse(t.strip())) for t in text.split(",") if t.strip())
    if not targets:
        raise ConfigError(f"no ssh target in {text!r}: expected user@host:port[,user@host:port...]")
    if len(set(targets)) != len(targets):
        raise ConfigError(f"an ssh target is named twice in {text!r}")
    return targets


class SshTargets(Spread[SshTransport]):
    """Ssh kernels spread over several hosts (see module docstring).

    :param targets: two or more ``user@host:port``.
    :param options: :class:`~.transport.SshTransport` options, the same for every target
        (``key_filename``, ``known_hosts``, ``host_key_policy``, ...).
    :raises ConfigError: if a target is bad or named twice.
    """

    name: ClassVar[str] = "ssh"
    keepable: ClassVar[bool] = True

    def __init__(self, targets: Sequence[str], **options: Any) -> None:
        members: list[SshTransport] = []
        try:
            for target in parse_targets(",".join(targets)):
                members.append(SshTransport(target=target, **options))
        except BaseException:
            for member in members:
                member.close()
            raise
        self.orphan_timeout = options.get("orphan_timeout")
        super().__init__(members)

    def place_of(self, member: SshTransport) -> str:
        return str(member.target)

    def place_in(self, locator: dict[str, Any]) -> str | None:
        reach = locator.get("reach")
        target = reach.get("target") if isinstance(reach, dict) else locator.get("target")
        return str(SshTarget.parse(target)) if isinstance(target, str) else None


def ssh_transport(*, targets: Sequence[str] | None = None, **options: Any) -> Transport:
    """The ``ssh`` transport: over ``targets`` (two or more: an :class:`SshTargets`; one: an
    :class:`~.transport.SshTransport` on it), else on ``target=`` or the run's sshd container.

    :raises ConfigError: if a target is bad, or both ``target`` and ``targets`` are given.
    :raises TransportUnavailableError: if a package of the ssh extra is older than this package declares.
    """
    refuse_too_old("ssh")
    if not targets:
        return SshTransport(**options)
    if options.get("target"):
        raise ConfigError("give the ssh transport target= or targets=, not both")
    chosen = parse_targets(",".join(targets))
    if len(chosen) == 1 or options.get("connect_via") is not None:
        return SshTransport(target=chosen[0], **options)
    return SshTargets(chosen, **options)


ssh_transport.__signature__ = factory_signature(SshTransport, "targets", "Sequence[str] | None")  # type: ignore[attr-defined]



def doctor_targets() -> tuple[bool, str, str] | None:
    """``hermes-kernel doctor ssh`` under ``PYTEST_HERMES_SSH_TARGETS`` (``None`` without it): log in to each
    target as the ssh leg will, with ``PYTEST_HERMES_SSH_KEY`` and ``PYTEST_HERMES_SSH_KNOWN_HOSTS``; ``(ok,
    what it saw, hint)``. Without this the doctor checked the sshd container the leg does not use then."""
    text = os.environ.get("PYTEST_HERMES_SSH_TARGETS", "").strip()
    if not text:
        return None
    hint = "fix what it says for each target, or unset PYTEST_HERMES_SSH_TARGETS for the sshd container"
    try:
        targets = parse_targets(",".join(text.split()))  # commas or whitespace, as the setting takes them
    except ConfigError as exc:
        return False, f"PYTEST_HERMES_SSH_TARGETS: {exc}", hint
    said = []
    for target in targets:
        transport = SshTransport(target=target, key_filename=os.environ.get("PYTEST_HERMES_SSH_KEY") or None,
                                 known_hosts=os.environ.get("PYTEST_HERMES_SSH_KNOWN_HOSTS") or None)
        try:
            transport._connection()
            said.append(f"{target} logs in")
        except Exception as exc:  # noqa: BLE001  # whatever the leg's first kernel would fail with
            said.append(f"{target}: {exc}")
        finally:
            transport.close()
    ok = all(s.endswith(" logs in") for s in said)
    return ok, f"PYTEST_HERMES_SSH_TARGETS (no sshd container): {'; '.join(said)}", hint
