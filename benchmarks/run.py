"""Side-by-side benchmarks: every transport and the anchors, in one run.

    python benchmarks/run.py                       # all transports that work here
    python benchmarks/run.py --transports local --cells 2000
    python benchmarks/run.py --scale               # the scale invariants (benchmarks/scale.py)

Prints a table with ratios, writes ``benchmarks/results/<stamp>.json`` and ``.png`` (matplotlib),
and ``benchmarks/results/latest.*``. Figures are medians (p50) of many iterations.
Anchors: jupyter_client + ipykernel (local), the raw floor (pipe echo; pipe echo through a
relay process; a raw ``docker exec`` stream echo) and the seed-style file protocol
(``benchmarks/seed_style_filecell.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli_args  # noqa: E402
import measures  # noqa: E402
import starts  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TARGETS = {"local": {"rt_p50_ms": 0.25, "start_p50_ms": 60.0, "idle_pss_mb": 15.0},
           "docker": {"rt_p50_ms": 1.0}, "ssh": {"rt_p50_ms": 1.0}}


def collect(args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {"env": measures.environment(), "transports": {}, "anchors": {}}
    for name in args.transports:
        progress(f"{name}: kernel figures")
        try:
            figs = measures.kernel_figures(name, args.cells, args.starts)
            progress(f"{name}: throughput with 1 and 8 owners")
            figs["cells_per_s_1"] = measures.throughput(name, 1, args.cells // 2)
            figs["cells_per_s_8"] = measures.throughput(name, 8, max(50, args.cells // 8))
            res["transports"][name] = figs
        except Exception as exc:  # noqa: BLE001 - an unavailable transport is reported, not fatal
            res["transports"][name] = {"unavailable": f"{type(exc).__name__}: {exc}"}
    res["starts"] = start_figures(args)
    progress("anchors: raw pipe echo, relay echo, bare python")
    a = res["anchors"]
    a["pipe_echo_p50_ms"] = statistics.median(measures.pipe_echo(args.cells)) * 1e3
    a["relay_echo_p50_ms"] = statistics.median(measures.pipe_echo(args.cells, relay=True)) * 1e3
    a["bare_python_start_p50_ms"] = statistics.median(measures.bare_python_start(args.starts)) * 1e3
    a["bare_python_rss_mb"] = measures.bare_python_rss_mb()
    import bench_remote
    from pytest_hermes_kernel.transports import get_transport

    for name, floor in (("docker", bench_remote.docker_echo_floor), ("ssh", bench_remote.ssh_echo_floor)):
        if name in args.transports and "unavailable" not in res["transports"].get(name, {}):
            progress(f"anchors: raw {name} exec stream echo")
            measured(a, f"{name}_exec_echo_p50_ms",
                     lambda floor=floor, name=name: statistics.median(floor(get_transport(name), args.cells)) * 1e3)
    if "filecell" in args.transports:
        progress("anchors: seed-style file cells (local shell backend)")
        try:
            import seed_style_filecell  # type: ignore[import-not-found]

            from pytest_hermes_kernel.transports import LocalShellBackend

            a["seed_filecell"] = seed_style_filecell.bench_backend("local shell", LocalShellBackend(), 50, 10)
        except Exception as exc:  # noqa: BLE001
            a["seed_filecell"] = {"unavailable": f"{type(exc).__name__}: {exc}"}
    if not args.no_jupyter:
        progress("anchors: jupyter_client + ipykernel")
        measured(a, "jupyter", lambda: measures.jupyter_figures(min(args.cells, 1000), min(args.starts, 8)),
                 none="jupyter_client or ipykernel is not installed: pip install '.[bench]'")
    return res


def measured(into: dict[str, Any], key: str, measure: Any, none: str = "") -> None:
    """``into[key] = measure()``; when it raises (or gives ``None``: ``none`` says why), the reason
    goes to ``into["unavailable"][key]`` instead, and the table says it was not measured: an
    anchor that failed late in a run (a jupyter kernel that would not start) ended it in a
    traceback, and every figure measured before was lost (no JSON, no table)."""
    try:
        value = measure()
    except Exception as exc:  # noqa: BLE001 - reported in the table, not fatal
        value, none = None, f"{type(exc).__name__}: {exc}"
    if value is None:
        progress(f"{key}: not measured ({none})")
        into.setdefault("unavailable", {})[key] = none
    else:
        into[key] = value


def start_figures(args: argparse.Namespace) -> dict[str, Any]:
    """Issue #11's start figures: both paths per transport, the remote anchors, memory, 64 at once."""
    out: dict[str, Any] = {}
    for name in args.transports:
        out[name] = res_unavailable(name, args)  # was skipped: the start table left the transport out, unsaid
        if out[name]:
            continue
        progress(f"{name}: start to first result, server and spawn path")
        try:
            out[name] = starts.path_figures(name, args.starts)
        except Exception as exc:  # noqa: BLE001 - reported, not fatal
            out[name] = {"unavailable": f"{type(exc).__name__}: {exc}"}
    anchors = {"docker": starts.docker_exec_true, "ssh": starts.ssh_exec_true}
    for name, anchor in anchors.items():
        if name in out and "unavailable" not in out[name]:
            progress(f"anchors: one {name} exec of true")
            try:  # it ended the run in a traceback, every figure measured before lost
                out[name]["exec_true_p50_ms"] = anchor(args.starts)
            except Exception as exc:  # noqa: BLE001 - reported in the table, not fatal
                out.setdefault("unavailable", {})[f"{name}_exec_true_p50_ms"] = f"{type(exc).__name__}: {exc}"
    if "local" in args.transports:
        progress("local: idle memory per kernel (8 forked from one server), 64 kernels at once")
        measured(out, "memory", lambda: starts.memory_per_kernel(8))
        measured(out, "concurrent", lambda: starts.concurrent_starts(64))
    return out


def res_unavailable(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """``{"unavailable": why}`` when transport ``name`` cannot run here, else ``{}``."""
    try:
        from pytest_hermes_kernel.transports import get_transport

        get_transport(name)
    except Exception as exc:  # noqa: BLE001
        return {"unavailable": f"{type(exc).__name__}: {exc}"}
    return {}


def start_table(res: dict[str, Any]) -> list[str]:
    """Rows of the start figures, each with its anchor and ratio."""
    a, st = res["anchors"], res.get("starts", {})
    bare = a.get("bare_python_start_p50_ms")
    jup = (a.get("jupyter") or {}).get("start_first_p50_ms")  # not start_p50_ms: that one includes a shutdown
    lines = ["start to first result (p50 ms): server path | spawn path | anchor"]
    for name, f in st.items():
        if name in ("memory", "concurrent", "unavailable"):
            continue
        if "unavailable" in f:
            lines.append(f"  {name:9} not measured: {f['unavailable']}")
            continue
        ours, spawn = f.get("start_first_p50_ms"), f.get("start_first_spawn_p50_ms")
        anchor, aname = ((f.get("exec_true_p50_ms"), f"one {name} exec of true") if name in ("docker", "ssh")
                         else (bare, "bare python -c pass"))
        ratio = f" ({ours / anchor:.2f}x)" if ours and anchor else ""
        extra = f"; jupyter_client {jup:.1f} ms (ours {jup / ours:.0f}x faster)" if name == "local" and jup and ours else ""
        spawn_text = f"{spawn:.1f}" if spawn is not None else "-"
        anchor_text = f"{anchor:.1f} {aname}{ratio}" if anchor else ""
        note = f" [note: {f['server_note']}]" if f.get("server_note") else ""
        lines.append(f"  {name:9} {ours:8.1f} | {spawn_text:>8} | {anchor_text}{extra}{note}")
    mem, conc = st.get("memory"), st.get("concurrent")
    if mem:
        lines.append(f"idle memory per kernel, {mem['kernels']} forked from one server: PSS {mem['idle_pss_mb']:.1f} MB, "
                     f"unshared (USS) {mem['idle_uss_mb']:.1f} MB")
    if conc:
        lines.append(f"{conc['kernels']} local kernels started at once, all first results: "
                     f"{conc['server_s']:.2f} s (server) | {conc['spawn_s']:.2f} s (spawn)")
    return lines


def progress(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def table(res: dict[str, Any]) -> str:
    a = res["anchors"]
    jup = a.get("jupyter") or {}
    lines = [f"{'transport':9} {'figure':22} {'ours':>10} {'target':>8} {'anchor':>10}  anchor name / ratio"]

    def row(t: str, fig: str, unit: str, ours: float | None, anchor: float | None, aname: str) -> None:
        tgt = TARGETS.get(t, {}).get(fig)
        o = "n/a" if ours is None else f"{ours:.3f}"
        ratio = f" ({ours / anchor:.2f}x)" if ours and anchor else ""
        lines.append(f"{t:9} {fig + ' ' + unit:22} {o:>10} {'' if tgt is None else f'<={tgt:g}':>8} "
                     f"{'' if anchor is None else f'{anchor:.3f}':>10}  {aname if anchor is not None else ''}{ratio}")

    for t, f in res["transports"].items():
        if "unavailable" in f:
            lines.append(f"{t:9} unavailable: {f['unavailable']}")
            continue
        floor = {"docker": a.get("docker_exec_echo_p50_ms"), "ssh": a.get("ssh_exec_echo_p50_ms")}.get(t)
        row(t, "rt_p50", "ms", f.get("rt_p50_ms"), jup.get("rt_p50_ms") if t == "local" else floor,
            "jupyter" if t == "local" else "raw exec stream echo" if floor else "")
        row(t, "rt_p99", "ms", f.get("rt_p99_ms"), jup.get("rt_p99_ms") if t == "local" else None, "jupyter")
        row(t, "start_p50", "ms", f.get("start_p50_ms"), jup.get("start_p50_ms") if t == "local" else None, "jupyter")
        row(t, "restart_p50", "ms", f.get("restart_p50_ms"), jup.get("restart_p50_ms") if t == "local" else None,
            "jupyter")
        row(t, "shutdown_p50", "ms", f.get("shutdown_p50_ms"), jup.get("shutdown_p50_ms") if t == "local" else None,
            "jupyter")
        row(t, "interrupt_p50", "ms", f.get("interrupt_p50_ms"),
            jup.get("interrupt_p50_ms") if t == "local" else None, "jupyter")
        row(t, "idle_rss", "MB", f.get("idle_rss_mb"), jup.get("idle_rss_mb") if t == "local" else None, "jupyter")
        row(t, "idle_pss", "MB", f.get("idle_pss_mb"), jup.get("idle_pss_mb") if t == "local" else None, "jupyter")
        row(t, "cells/s 1 owner", "", f.get("cells_per_s_1"), None, "")
        row(t, "cells/s 8 owners", "", f.get("cells_per_s_8"), None, "")
    lines.append(f"floors: pipe echo {a['pipe_echo_p50_ms']:.3f} ms; pipe echo via a relay process "
                 f"{a['relay_echo_p50_ms']:.3f} ms; bare python start {a['bare_python_start_p50_ms']:.1f} ms; "
                 f"bare python RSS {a['bare_python_rss_mb']:.1f} MB")
    seed = a.get("seed_filecell")
    if seed and "unavailable" not in seed:
        ours_ms, seed_ms = seed["filecell"]["p50_ms"], seed["seed_style"]["p50_ms"]
        sh_ms = seed["floor"]["sh_true_ms"]
        lines.append(f"filecell cell (local shell) p50 {ours_ms:.1f} ms: {ours_ms / sh_ms:.1f}x one `sh -c true` "
                     f"execute ({sh_ms:.1f} ms), {ours_ms / a['bare_python_start_p50_ms']:.2f}x bare python, "
                     f"{seed_ms / ours_ms:.0f}x faster than the seed-style protocol ({seed_ms:.0f} ms)")
        lines.append(f"  details: ours {json.dumps(seed['filecell'])}; seed {json.dumps(seed['seed_style'])}; "
                     f"one execute {json.dumps(seed['floor'])}")
    elif seed:
        lines.append(f"seed-style file protocol: {seed['unavailable']}")
    lines += start_table(res)
    missing = {**a.get("unavailable", {}), **res.get("starts", {}).get("unavailable", {}),
               **{f"{t} kernel figures": f["unavailable"] for t, f in res["transports"].items() if "unavailable" in f},
               **{f"{t} start figures": f["unavailable"] for t, f in res.get("starts", {}).items()
                  if t not in ("memory", "concurrent", "unavailable") and "unavailable" in f}}
    if missing:
        lines.append("not measured: " + "; ".join(f"{key} ({why})" for key, why in missing.items()))
    return "\n".join(lines)


def chart(res: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = res["anchors"]
    jup = a.get("jupyter") or {}
    names, values = [], []
    for t, f in res["transports"].items():
        if "rt_p50_ms" in f:
            names.append(f"{t}\n(ours)")
            values.append(f["rt_p50_ms"])
    for label, key in (("pipe echo", "pipe_echo_p50_ms"), ("relay echo", "relay_echo_p50_ms"),
                       ("docker exec\necho", "docker_exec_echo_p50_ms"), ("ssh exec\necho", "ssh_exec_echo_p50_ms")):
        if a.get(key) is not None:
            names.append(label)
            values.append(a[key])
    if jup.get("rt_p50_ms"):
        names.append("jupyter_client\n+ipykernel")
        values.append(jup["rt_p50_ms"])
    fig, ax = plt.subplots(figsize=(max(6, len(names) * 1.2), 4))
    bars = ax.bar(names, values, color=["#2b6cb0" if "ours" in n else "#a0aec0" for n in names])
    ax.bar_label(bars, fmt="%.2f")
    ax.set_yscale("log")
    ax.set_ylabel("trivial cell round trip p50 (ms, log)")
    ax.set_title(f"pytest-hermes-kernel round trips ({res['env']['when']}, {res['env']['cpus']} cpus)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _transport_list(text: str) -> list[str]:
    """An argparse type: built-in transport names, comma-separated, each once (a typo was
    reported as an unavailable transport, exit status 0)."""
    from pytest_hermes_kernel.transports import TRANSPORT_NAMES

    names = text.split(",")
    unknown = [n for n in names if n not in TRANSPORT_NAMES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown transport {', '.join(map(repr, unknown))}; known: "
                                         f"{', '.join(TRANSPORT_NAMES)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"{', '.join(twice)} named twice")
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transports", type=_transport_list, default=["local", "docker", "ssh", "filecell"])
    ap.add_argument("--cells", type=cli_args.count(2), default=2000, help="round trips per figure (at least 2)")
    ap.add_argument("--starts", type=cli_args.count(1), default=20, help="starts per figure (at least 1)")
    ap.add_argument("--no-jupyter", action="store_true")
    ap.add_argument("--scale", action="store_true", help="run the scale invariants instead")
    args = ap.parse_args(argv)
    if args.scale:
        import scale

        return scale.main([])
    res = collect(args)
    text = table(res)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for name in (stamp, "latest"):
        (RESULTS / f"{name}.json").write_text(json.dumps(res, indent=2))
        (RESULTS / f"{name}.txt").write_text(text + "\n")
    try:
        chart(res, RESULTS / f"{stamp}.png")
        chart(res, RESULTS / "latest.png")
    except ImportError as exc:  # was a traceback, and latest.png stayed an older run's chart
        (RESULTS / "latest.png").unlink(missing_ok=True)
        progress(f"no chart: matplotlib cannot be imported ({exc}); pip install '.[bench]'")
        print(f"wrote {RESULTS / (stamp + '.json')} and .txt")
        return 0
    print(f"wrote {RESULTS / (stamp + '.json')} and .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
