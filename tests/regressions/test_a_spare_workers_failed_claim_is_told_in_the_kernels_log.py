"""Since 1f59f57 a local server's spare sets its worker up before the claim, its stderr already on
the kernel's output pipe: a worker whose claim failed printed its traceback there, and the spare's
supervisor, forking the kernel's first worker in its place, drained that pipe unread. The kernel's
log said only ``the kernel's worker did not take its config (a spare's claim): b''``, never why
(before, the worker put its stderr on the log first). The traceback is in the log again."""

from __future__ import annotations

import os
import socket
import sys

from pytest_hermes_kernel.kernel.runner import spare
from pytest_hermes_kernel.kernel.runner.frames import encode_frame, send_all
from tests.support import wait_until

#: A kernel id no environment slot holds: stamping the worker with it fails, as any claim step may.
UNSTAMPABLE_ID = "k" * 200


def test_a_spare_workers_failed_claim_is_told_in_the_kernels_log(tmp_path):
    log = tmp_path / "runner.log"
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the spare's worker, its stderr where a spare's worker has it: a pipe no one reads
        try:
            ours.close()
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 - as a worker has it (environ.become_worker)
            spare._worker_claim(theirs)
        finally:
            os._exit(99)
    theirs.close()
    try:
        send_all(ours, encode_frame({"type": "claim", "config": {"kernel_id": UNSTAMPABLE_ID, "log": str(log)}}))
        status = wait_until(lambda: os.waitpid(pid, os.WNOHANG)[1] or None, 10.0, what="the worker to end")
    finally:
        ours.close()

    assert os.waitstatus_to_exitcode(status) == spare.CLAIM_FAILED
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    assert "Traceback" in text and "OSError" in text, text
