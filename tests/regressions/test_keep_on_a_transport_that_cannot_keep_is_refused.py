"""Seen: ``start_kernel("filecell").keep(60)`` returned ``ExitInfo(step="kept")`` and closed the
handle, leaving the runner up for the whole TTL with no way back to it (the filecell transport
cannot reach a kept runner: ``attach_kept`` raises, and no record names it): a kernel no one
owns, for as long as the TTL said (any, ``1e300`` too). docs/api.md says keep() is for local,
docker and ssh. Now a transport that is not ``keepable`` refuses it: ``ConfigError``, nothing
done, the kernel still the handle's."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import ConfigError, start_kernel
from pytest_hermes_kernel.transports import make_transport


def test_keep_on_filecell_is_refused_and_the_kernel_stays_the_handles() -> None:
    transport = make_transport("filecell")
    try:
        with start_kernel(transport) as kernel:
            kernel.execute("x = 1")
            with pytest.raises(ConfigError, match=r"the filecell transport cannot keep a kernel .*nothing was done"):
                kernel.keep(60.0)
            after = kernel.execute("x")
            assert after.value == "1" and not after.kernel.state_lost, after.summary()
    finally:
        transport.close()
