import os, sys, time, asyncio
from pytest_hermes_kernel import aexecute, start_kernel
T = sys.argv[1] if len(sys.argv) > 1 else "local"
def log(*a): print(*a, flush=True)
k = start_kernel(T, timeout=60)
k.execute("n = 0")
async def main():
    t0 = time.monotonic()
    rs = await asyncio.gather(*[aexecute(k, f"n += 1; print({i}); n") for i in range(40)])
    log("many aexecute:", [r.status for r in rs].count("ok"), "ok; values", sorted(int(r.value) for r in rs) == list(range(1, 41)), f"{time.monotonic()-t0:.1f}s")
    # cancellation mid-cell
    seen = []
    task = asyncio.create_task(aexecute(k, "import time\nfor i in range(100):\n    time.sleep(0.1)\n    n += 1000", on_cancelled=seen.append))
    await asyncio.sleep(1.0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        log("cancelled")
    t1 = time.monotonic()
    r = await aexecute(k, "n")
    log("after cancel n=", r.value, "on_cancelled:", [(s.status, s.watchdog) for s in seen], f"{time.monotonic()-t1:.2f}s")
    await asyncio.sleep(1.0)
    r2 = await aexecute(k, "n")
    log("1s later n=", r2.value, "(same => not left running)")
    # cancel many queued
    tasks = [asyncio.create_task(aexecute(k, "time.sleep(0.5); n += 1")) for _ in range(6)]
    await asyncio.sleep(0.7)
    for t in tasks: t.cancel()
    res = await asyncio.gather(*tasks, return_exceptions=True)
    r3 = await aexecute(k, "n")
    await asyncio.sleep(1.5)
    r4 = await aexecute(k, "n")
    log("queued cancel:", [type(x).__name__ for x in res], "n", r3.value, "->", r4.value)
asyncio.run(main())
k.shutdown()
