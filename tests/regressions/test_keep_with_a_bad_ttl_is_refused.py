"""``KernelHandle.keep(orphan_timeout)`` refuses a TTL that is not a finite number of seconds > 0,
before anything is done: the kernel stays this handle's, running.

It took any (found by a breaker helper on 2026-12-05) and said ``kept for post-mortem: it ends
after nan s without a client``: a ``nan``, ``0`` or negative TTL ended the kept kernel at once
(the runner's orphan timer read it as run out), ``inf`` was sent to the runner as JSON's
``Infinity``, ``True`` kept it 1 s, and ``"60"`` kept the kernel, then raised a bare
``ValueError: Unknown format code 'g' for object of type 'str'``, the caller left believing the
keep had failed while the kernel ran on, owned by nobody. The plugin's ``--hermes-keep-failed-ttl``
takes the same values (any finite number > 0: ``1e300`` keeps a kernel until it is swept).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.errors import ConfigError


@pytest.mark.parametrize("ttl", [float("nan"), -1, 0, True, float("inf"), "60", None],
                         ids=["nan", "negative", "zero", "bool", "inf", "str", "None"])
def test_a_bad_ttl_is_refused_and_the_kernel_stays_ours(make_kernel, ttl) -> None:
    k = make_kernel()
    k.execute("x = 'still here'")

    with pytest.raises(ConfigError, match=r"orphan_timeout must be a finite number of seconds > 0"):
        k.keep(ttl)

    assert k.alive and k.execute("x").value == "'still here'"
