"""Per-run ssh key pairs for the sshd containers (never a fixed password or key)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import paramiko

__all__ = ["generate_keypair", "load_private_key"]


def generate_keypair(comment: str = "pytest-hermes-kernel") -> tuple[str, str]:
    """Make a fresh Ed25519 key pair for one run (never a fixed password or key).

    Ed25519 via ``cryptography`` (a paramiko dependency): paramiko cannot generate Ed25519
    keys itself, and RSA-2048 generation costs ~60 ms here against well under 1 ms.

    :param comment: comment appended to the public key line.
    :returns: ``(private_key, public_key)``: the private key in OpenSSH PEM format (load it
        with :func:`load_private_key`) and an ``authorized_keys`` line.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode("ascii")
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode("ascii")
    return private, f"{public} {comment}"


def load_private_key(private_key: str) -> paramiko.PKey:
    """Turn :func:`generate_keypair`'s private key into a paramiko key.

    :param private_key: OpenSSH PEM text.
    :returns: a ``paramiko.Ed25519Key``.
    """
    import paramiko

    return paramiko.Ed25519Key.from_private_key(io.StringIO(private_key))
