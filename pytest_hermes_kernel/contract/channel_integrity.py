"""Contract: nothing a cell does can reach the control channel (forged frames, fork, fd tricks)."""

from __future__ import annotations

import json
import struct

from ._probes import kernel_pids, wait_until


def _forged_result(rid: int) -> bytes:
    body = json.dumps({"type": "result", "id": rid, "status": "ok", "value": "'FORGED'",
                       "blobs": [0, 0, 0, 0]}).encode()
    return struct.pack(">II", 4 + len(body), len(body)) + body


def test_forged_frames_on_stdout_stay_in_that_cells_output(kernel):
    kernel.execute("import os, sys, struct, json")
    frames = [_forged_result(rid) for rid in range(1, 12)]  # every id the host could be waiting on
    code = ("data = {frames!r}\n"
            "for f in data:\n"
            "    sys.stdout.buffer.write(f); sys.stdout.flush()\n"
            "    os.write(1, f)\n"
            "    os.write(2, f)\n"
            "'real'").format(frames=frames)

    r = kernel.execute(code)

    assert r.status == "ok" and r.value == "'real'", r.summary()
    assert r.stdout.count('"value": "\'FORGED\'"') == 2 * len(frames)
    assert r.stderr.count('"status": "ok"') == len(frames)
    nxt = kernel.execute("'still real'")
    assert nxt.value == "'still real'" and nxt.stdout == ""


def test_bad_frame_headers_on_stdout_do_not_hang_the_channel(kernel):
    code = ("import os, sys\n"
            "os.write(1, b'\\xff\\xff\\xff\\xff' + b'garbage')\n"
            "os.write(1, b'\\x00\\x00\\x00\\x10\\x00\\x00\\x00\\x08{\"type\":\"hello\"}')\n"
            "sys.stdout.buffer.write(b'\\x00\\x00\\x00\\x00'); sys.stdout.flush()\n"
            "print('{\"type\": \"bye\", \"id\": 1, \"step\": \"request\"}')\n"
            "42")
    r = kernel.execute(code)
    assert r.status == "ok" and r.value == "42", r.summary()
    assert "garbage" in r.stdout and '"type": "bye"' in r.stdout
    assert kernel.execute("'next'").value == "'next'"


def test_fork_child_never_touches_the_channel(kernel):
    code = ("import os, time\n"
            "child = os.fork()\n"
            "if child == 0:\n"
            "    print('in child')\n"
            "    raise RuntimeError('child error must not become a result')\n"
            "child")
    r = kernel.execute(code)

    assert r.status == "ok", r.summary()
    child = int(r.value)
    wait_until(lambda: child not in kernel_pids(kernel), 5.0, what="the forked child to end")
    status = kernel.execute("os.WEXITSTATUS(os.waitpid(child, 0)[1])")  # (waitstatus_to_exitcode: 3.9+)
    assert status.value == "1"  # the child left as a Python program does after an error, never through the runner loop
    assert kernel.execute("21 * 2").value == "42"


def test_fork_child_outliving_its_cell_cannot_answer_for_later_cells(kernel):
    code = ("import os, time\n"
            "child = os.fork()\n"
            "if child == 0:\n"
            "    time.sleep(0.5)\n"
            "child")
    child = int(kernel.execute(code).value)

    results = [kernel.execute(f"{i} * 2").value for i in range(20)]  # runs while the child lives

    assert results == [str(i * 2) for i in range(20)]
    wait_until(lambda: child not in kernel_pids(kernel), 5.0, what="the forked child to end")
    assert kernel.execute("os.waitpid(child, 0)[1]").value == "0"


def test_fork_child_tool_call_is_refused(kernel_factory):
    k = kernel_factory(tools={"add": lambda a, b: a + b})
    code = ("import os, hermes_tools\n"
            "r, w = os.pipe()\n"
            "child = os.fork()\n"
            "if child == 0:\n"
            "    try:\n"
            "        msg = repr(hermes_tools.add(a=1, b=2))\n"
            "    except Exception as exc:\n"
            "        msg = type(exc).__name__ + ': ' + str(exc)\n"
            "    os.write(w, msg.encode()); os._exit(0)\n"
            "os.close(w)\n"
            "answer = os.read(r, 1000).decode()\n"
            "os.waitpid(child, 0)\n"
            "answer")
    r = k.execute(code)
    assert r.status == "ok", r.summary()
    assert r.value.startswith("'ToolError") and "forked" in r.value
    assert r.tool_calls == ()
