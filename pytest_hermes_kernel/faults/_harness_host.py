"""The host half of the host harness: a separate process that owns a kernel.

Run as ``python -m pytest_hermes_kernel.faults._harness_host``. It reads pickled requests from
stdin and writes pickled replies to stdout (``u32`` length prefix each; reply id
:data:`EVENT_ID` carries a kernel event, ``(event, payload)``), so the test process can
drive a kernel that lives under *this* process and then SIGKILL this process to see what the
kernel does when its host dies without a word.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
from typing import Any

from .harness import _LEN, EVENT_ID  # the test process's side of the same wire

FORWARDED_EVENTS = ("running",)
"""Kernel events the test process needs while a cell runs (results come as replies)."""


def _read(stream: Any) -> Any:
    head = stream.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    (n,) = _LEN.unpack(head)
    return pickle.loads(stream.read(n))


class _Host:
    def __init__(self, out: Any) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.kernel = None

    def reply(self, rid: int, ok: bool, value: Any) -> None:
        try:
            data = pickle.dumps((rid, ok, value))
        except Exception as exc:  # noqa: BLE001 - an unpicklable value still gets an answer
            data = pickle.dumps((rid, False, RuntimeError(f"unpicklable reply: {exc}")))
        with self.lock:
            self.out.write(_LEN.pack(len(data)) + data)
            self.out.flush()

    def forward(self, event: str, _kernel: Any, payload: Any) -> None:
        if event in FORWARDED_EVENTS:
            self.reply(EVENT_ID, True, (event, payload))

    def start(self, transport: str, options: dict[str, Any], transport_options: dict[str, Any],
              run_id: str, registration: tuple[list[str], bytes] | None = None) -> dict[str, Any]:
        from pytest_hermes_kernel.containers.sharing import use_run_id
        from pytest_hermes_kernel.kernel.handle import KernelHandle
        from pytest_hermes_kernel.kernel.options import KernelOptions
        from pytest_hermes_kernel.transports import get_transport, make_transport, register_transport

        if registration is not None:  # registered in the test process (a conftest.py): register it here too
            path, factory = registration
            sys.path.extend(p for p in path if p not in sys.path)
            register_transport(transport, pickle.loads(factory))
        use_run_id(run_id)  # the test process's run: share its containers, never leave our own
        t = make_transport(transport, **transport_options) if transport_options else get_transport(transport)
        self.kernel = KernelHandle(t, KernelOptions(**options))
        self.kernel.add_listener(self.forward)
        self.kernel.start()
        k = self.kernel
        launched = k.launched
        return {"kernel_id": k.kernel_id, "pid": k.pid, "runner_pid": k.runner_pid, "host_pid": os.getpid(),
                "transport": t.name, "locator": t.locator(launched) if launched is not None else {},
                "label": launched.label if launched is not None else ""}

    def call(self, rid: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            if method == "start":
                value = self.start(*args, **kwargs)
            else:
                value = getattr(self.kernel, method)(*args, **kwargs)
                if method == "execute":
                    value = (value, self.kernel.pid, self.kernel.runner_pid)
            self.reply(rid, True, value)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the test
            self.reply(rid, False, exc)


def main() -> None:
    host = _Host(sys.stdout.buffer)
    sys.stdout = sys.stderr  # nothing else may write to the reply stream
    while True:
        request = _read(sys.stdin.buffer)
        if request is None:
            break
        rid, method, args, kwargs = request
        threading.Thread(target=host.call, args=(rid, method, args, kwargs), daemon=True).start()
    if host.kernel is not None:
        host.kernel.shutdown()


if __name__ == "__main__":
    main()
