"""A local kernel kept by a kit before 2026-12-04 (6c93526) survives ``hermes-kernel sweep`` run with
another ``TMPDIR``, as one kept by this kit does.

Such a kernel carries no ``HERMES_KERNEL_TMPDIR``: kept by 50c2a37 under ``TMPDIR=/tmp/kd-tmp``
(exec worked, 3600 s left), ``TMPDIR=/tmp/kd-tmp2 hermes-kernel sweep --dry-run kernel-processes``
of this kit said ``would kill kernel process 14651 (host 14452 is gone)`` and the worker's too, and
two such kept kernels of this session were found dead 6 minutes after they were kept (a sweep with
the default temp dir on the same machine). Its processes still carry their host's ``TMPDIR``
(inherited): the record is looked for under it. One whose TTL ran out is still killed.

The process sweep looks at the whole machine: here it is shown only this test's processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_hermes_kernel.containers import kept
from tests.regressions.test_a_sweep_under_another_tmpdir_leaves_kept_kernels_alone import (  # noqa: F401  (a fixture)
    keeping_tmp, sweep_spares_the_kept_kernel)


def test_an_older_kits_kept_kernel_is_found_by_its_hosts_tmpdir(private_tmp: Path, keeping_tmp: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    sweep_spares_the_kept_kernel(keeping_tmp, monkeypatch, "HERMES_KERNEL_ID", lambda env: {  # no TMPDIR_ENV:
        **{k: v for k, v in env.items() if k != kept.TMPDIR_ENV}, "TMPDIR": str(keeping_tmp)})  # its host's TMPDIR
