"""``hermes-kernel sweep --dry-run`` lists a kept kernel whose TTL ran out once, as the sweep ends it.

It listed it three times: ``would remove kept kernel K``, then ``would kill kernel process P (host
H is gone)`` for its runner and worker and ``would remove kernel dir D``, where the sweep ends
the kept kernel first (its processes and kernel dir go with it) and finds neither afterwards:
the dry run's totals (3 kernel processes, 1 kernel dir) were not the sweep's (0, 0). A dry run
now leaves out of the later kinds what the kept sweep already listed: the kernel dir always
(ending the kernel, or cleaning up after a gone one, removes it), the processes while the kernel's
runner runs (ending it ends them; a gone runner's stragglers are still the process sweep's).

As in ``test_keep_failed.py``: a failed test keeps its kernel in an inner run under a private
``TMPDIR``; its record is then aged past its TTL the way an hour's wait would leave it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.plugin.test_keep_failed import FAILING_TEST, hermes, kernel_dirs, kept_env, kept_kernel, records  # noqa: F401
from tests.support import gone, pids_with_kernel_id, wait_until


def _expire(tmp: Path, kernel_id: str) -> None:
    """Age the kept record of ``kernel_id`` past its TTL (its runner's own timer is not touched)."""
    path = tmp / f"pytest-hermes-kernel-{os.getuid()}" / "kept" / f"{kernel_id}.json"
    record = json.loads(path.read_text())
    record["kept_at"] = record["detached_at"] = time.time() - 2 * record["ttl_s"]
    path.write_text(json.dumps(record))


def test_a_dry_run_lists_an_expired_kept_kernel_once_and_the_sweep_ends_all_of_it(pytester, run, kept_env):
    pytester.makepyfile(test_keep=FAILING_TEST)
    run("--hermes-keep-failed").assert_outcomes(failed=1)
    kid, pid = kept_kernel(pytester)
    [kdir] = kernel_dirs(kept_env)
    pids = pids_with_kernel_id(kid)
    _expire(kept_env, kid)

    dry = hermes("sweep", "--dry-run", "kept", "kernel-dirs", "kernel-processes")

    assert dry.returncode == 0, dry.stderr
    mentions = [line for line in dry.stdout.splitlines() if kid in line or kdir in line
                or any(f"process {p} " in line for p in pids)]
    assert len(mentions) == 1 and mentions[0].startswith(f"would remove kept kernel {kid} "), dry.stdout
    assert not gone(pid) and records(kept_env) == [kid]  # a dry run ends nothing

    swept = hermes("sweep", "kept")  # the process sweep is machine-wide: see ORPHAN_SWEEP_IS_MACHINE_WIDE

    assert swept.returncode == 0 and f"removed kept kernel {kid}" in swept.stdout, swept.stdout + swept.stderr
    wait_until(lambda: gone(pid) and not pids_with_kernel_id(kid), 10.0, what=f"kept kernel {kid} to end")
    assert records(kept_env) == [] and kernel_dirs(kept_env) == []
