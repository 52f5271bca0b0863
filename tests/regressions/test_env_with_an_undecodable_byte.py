"""Found by the breaker session: a kernel environment value holding an undecodable byte as
``os.environ`` holds it (``"\\udcff"``: byte 0xff, ``surrogateescape``) reached the kernel on the
local transport and on the spawn path of docker and ssh, but on their kernel-server path the
spawn request's frame raised a bare ``UnicodeEncodeError`` (the codec encoded strict UTF-8): the
server path changed semantics. A lone surrogate that stands for no byte (``"\\ud800"``) started
a kernel that died at its first cell ("exited with code 70"); it is refused up front now.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import ConfigError
from tests.support import transport_of_its_own

READ_A = "import os\nos.environb.get(b'A')"


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_an_undecodable_byte_reaches_a_kernel_forked_by_a_remote_server(docker_ready, name):
    with transport_of_its_own(name, server=True) as transport:
        with start_kernel(transport, env={"A": "\udcff"}) as kernel:
            assert kernel.execute(READ_A).value == "b'\\xff'"


def test_a_surrogate_that_stands_for_no_byte_is_refused():
    with pytest.raises(ConfigError, match=r"env variable 'A': '\\ud800' is a lone surrogate"):
        start_kernel("local", env={"A": "\ud800"})
