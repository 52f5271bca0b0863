"""Seen: a filecell ``root=`` of 50 non-ASCII characters (100 bytes in UTF-8) passed the root's
length check, which counted characters (70 at most), then every start failed after the launch:
"the filecell kernel runner did not start (exit 0, client gone)", hinting "the backend needs sh,
python3 ('python3') and a writable '/tmp/.../ééé...'", which it had: the kernel's socket path,
``<root>/k-<12>-<16>/sock``, was longer than a unix socket address holds (107 bytes), and the
client could not connect to it. Now the length is counted in bytes, as the socket's is: such a root
is a ``ConfigError`` naming it and the limit when the transport is made, before anything runs."""

from __future__ import annotations

import shutil
import tempfile

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.transports import FileCellTransport, LocalShellBackend


def test_a_root_within_70_characters_but_over_70_bytes_is_refused_naming_it() -> None:
    base = tempfile.mkdtemp(prefix="fcw-", dir="/tmp")  # short: the root must fit a socket path
    try:
        root = f"{base}/{'é' * 50}"  # 50 + len(base) + 1 characters, about 120 bytes
        assert len(root) <= 70 < len(root.encode())
        with pytest.raises(ConfigError) as info:
            FileCellTransport(LocalShellBackend(), root=root)
        text = str(info.value)
        assert repr(root) in text and "70 bytes" in text and "unix socket" in text, text
    finally:
        shutil.rmtree(base)


def test_a_root_of_70_bytes_of_wide_characters_starts_kernels() -> None:
    base = tempfile.mkdtemp(prefix="fcw-", dir="/tmp")  # short: the root must fit a socket path
    root = f"{base}/" + "é" * ((70 - len(base) - 1) // 2)  # as long as may be, in bytes
    transport = FileCellTransport(LocalShellBackend(), root=root)
    try:
        with start_kernel(transport, start_timeout=60) as kernel:
            assert kernel.execute("6 * 7", timeout=30).value == "42"
    finally:
        transport.close()
        shutil.rmtree(base)
