"""What a user hands the ssh transport to log in and to trust a host, read with a clear error.

A pinned ``host_key`` is read when the transport is made; a ``key_filename`` and a
``known_hosts`` file at each connect (a kept kernel's record outlives the files it names; they
may change during a run). Each that cannot be used (a file missing, no private key or encrypted;
a pin that is no ``"<type> <base64>"``) is a :class:`~pytest_hermes_kernel.errors.ConfigError`
naming it: they were a "cannot reach ssh host" at the first kernel's start, or a bare
``ValueError`` from deep inside.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from ...errors import ConfigError

if TYPE_CHECKING:
    import paramiko


def read_key_file(path: str) -> paramiko.PKey:
    """The private key in ``path`` (and its ``-cert.pub`` certificate, if one lies beside it).

    :raises ConfigError: if it cannot be read, is no private key paramiko knows, or is encrypted
        (the transport takes no passphrase).
    """
    import paramiko

    try:
        return paramiko.PKey.from_path(path)
    except OSError as exc:
        raise ConfigError(f"the ssh key file {path!r} cannot be read: {exc.strerror or exc}") from None
    except TypeError:  # cryptography's "password-protected, but password was not provided"
        raise ConfigError(f"the ssh key file {path!r} is encrypted, and the ssh transport takes no passphrase: "
                          "pass pkey=paramiko.PKey.from_path(path, passphrase) instead, or a key without one") from None
    except (ValueError, paramiko.SSHException, paramiko.UnknownKeyType):
        raise ConfigError(f"the ssh key file {path!r} is no private key paramiko can use (OpenSSH or PEM format, "
                          "RSA, ECDSA or Ed25519; a .pub file is the public half)") from None


def read_host_key(text: object) -> paramiko.PKey:
    """The public key of a ``host_key=`` pin, ``"<type> <base64>"`` as in a known_hosts line.

    :raises ConfigError: if ``text`` is no such key; the message names it.
    """
    import paramiko

    words = text.split() if isinstance(text, str) else []
    try:
        return paramiko.PKey.from_type_string(words[0], base64.b64decode(words[1], validate=True))
    except (IndexError, binascii.Error, ValueError, paramiko.SSHException, paramiko.UnknownKeyType) as exc:
        why = "" if isinstance(exc, IndexError) else f" ({type(exc).__name__}: {exc})"
        raise ConfigError(f"host_key must be '<type> <base64>' as in a known_hosts line (e.g. 'ssh-ed25519 "
                          f"AAAAC3...'), not {text!r}{why}") from None


def load_known_hosts(keys: paramiko.HostKeys, path: str) -> None:
    """Add the entries of the known_hosts file ``path`` to ``keys`` (the file is never written).

    :raises ConfigError: if it cannot be read or is no known_hosts file.
    """
    import paramiko

    try:
        keys.load(path)  # not SSHClient.load_host_keys: paramiko's auto-add would write that file
    except OSError as exc:
        raise ConfigError(f"the known_hosts file {path!r} cannot be read: {exc.strerror or exc}") from None
    except (paramiko.hostkeys.InvalidHostKey, paramiko.SSHException, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the known_hosts file {path!r} is no known_hosts file (a line of "
                          f"'host keytype base64' could not be read: {exc})") from None
