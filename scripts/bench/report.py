#!/usr/bin/env python3
"""Writes docs/BENCHMARKS.md (and its plot) from the measurements kept in docs/bench-data/.

    report.py                       the whole file again, from docs/bench-data/ alone
    report.py --results DIR [--plot P] [--command C]
                                    the main run's sections (kernels, agreement, whole tools,
                                    streams, issue 6's and 13's targets) from DIR (scripts/bench/run
                                    calls this with its $OUT), the others from docs/bench-data/
    report.py --jobs DIR [DIR...]   the jobs section from these runs of scripts/bench/jobs.py --out
                                    (a machine each, in this order; keep them in
                                    docs/bench-data/jobs/, where `report.py` alone finds them)
    report.py --service DIR [DIR...]
                                    issue 50's section from these runs of scripts/bench/service.py
                                    --out (keep them in docs/bench-data/service/, as the jobs')
    report.py --stage NAME DIR [DIR...]
                                    a stage of scripts/bench/run (thresholds, expected,
                                    directions, segments): its JSON lines in the DIRs are copied into
                                    docs/bench-data/NAME/, and its section made from them

Every form writes the whole file (--md, default docs/BENCHMARKS.md): its sections are SECTIONS,
in order, each with the one command that measures it again. The main run's data: kernels.jsonl
(histopipe-bench, peers, cpu_peers.py, kornia-peer, and the agreement of kornia-rs's outputs with
OpenCV's), tools.jsonl, streams.jsonl, meta.json (GPU, driver, versions; `rows`: which commits
measured which rows, where the run was split over calls) and before.jsonl; a run without
kornia-rs gives the same report less its columns. The sections measured by hand or whose JSON
lines were not kept are their text in docs/bench-data/sections/NAME.md. Standard library only;
with --plot, matplotlib for a PNG plot when it can be imported, else a self-written SVG (the
plot's suffix follows); without, docs/benchmarks.svg.
"""
import argparse
import glob
import json
import math
import os
import re
import shutil
from collections import defaultdict

# Our op -> the peers' op it is compared with (same work on the same input).
PEER_OP = {
    "pad": "pad",
    "rotate.nearest": "rotate.nearest",
    "rotate.bilinear": "rotate.bilinear",
    "colhist": "histogram",
    "cdf": "histogram",
    "equalize.histogram": "histogram",
    "equalize.map": "equalize.map",
    "equalize": "equalize",
    "edges": "edges",
    "hough-vote.global": "hough",
    "hough-vote.shared": "hough",
    "hough-vote": "hough",
    "hough": "hough",
    "clahe": "clahe",
    "threshold": "threshold",
}
HISTOGRAMS = ["colhist", "cdf", "equalize.histogram"]
GPU_PEERS = ["cub", "npp", "opencv-cuda", "kornia-cuda"]
CPU_PEERS = ["opencv-all", "opencv-1", "kornia-all", "kornia-1"]
# Our CPU backend over each CPU peer on the same thread count: (ours, peer, column). OpenCV's columns
# are always shown; kornia-rs's where it has the operation.
CPU_RATIOS = [("histopipe-cpu-1", "opencv-1", "cpu-1/opencv-1"), ("histopipe-cpu", "opencv-all", "cpu/opencv-all"),
              ("histopipe-cpu-1", "kornia-1", "cpu-1/kornia-1"), ("histopipe-cpu", "kornia-all", "cpu/kornia-all")]
# histopipe-cpu: our CPU backend on every core; histopipe-cpu-1: on one thread (`--threads 1`).
OURS = ("histopipe-gpu", "histopipe-cpu", "histopipe-cpu-1")
IMPL_ORDER = ["histopipe-gpu", "copy", "cub", "npp", "cuda", "opencv-cuda", "kornia-cuda", "histopipe-cpu",
              "histopipe-cpu-1", "opencv-all", "opencv-1", "kornia-all", "kornia-1"]
# The CPU targets: our CPU backend over OpenCV on the same thread count.
CPU_TARGETS = {"colhist": 1.5, "cdf": 1.5, "equalize.histogram": 1.5, "equalize": 1.5,
               "rotate.nearest": 1.5, "rotate.bilinear": 1.5, "edges": 2.0, "hough": 1.0}


# Issue 13's targets for the CPU backend on every core: within 1.25x of OpenCV on every core from
# 2560x1707 up, and faster than HoughLines.
CPU_ALL_TARGETS = {"pad": 1.25, "rotate.nearest": 1.25, "rotate.bilinear": 1.25, "colhist": 1.25, "cdf": 1.25,
                   "equalize": 1.25, "edges": 1.25, "hough": 1.0}
CPU_ALL_FROM = 2560 * 1707
# And with --threads 1, no slower than before the split: measured in the same run when
# scripts/bench/run had HISTOPIPE_BEFORE (before.jsonl), else against issue 13's table (ms at 4096x3112, 8-bit,
# commit ad49319, one core of the 16-core H100 host; content not given, so both are held to it).
BEFORE_SPLIT_MS = {"rotate.nearest": 21.7, "rotate.bilinear": 29.5, "colhist": 9.74, "cdf": 7.95,
                   "equalize": 10.8, "edges": 57.3, "pad": 2.13, "hough": 136.0}


def load_jsonl(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        pass
    return rows


def fmt_ms(v):
    if v is None:
        return "–"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def table_row(cells):
    """One Markdown table row; a `|` inside a cell (a pipeline's name) is escaped."""
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def fmt_ratio(v):
    return "–" if v is None else f"{v:.3g}x"


def size_key(r):
    return (r["width"] * r["height"], r["width"], r["content"])


class Kernels:
    def __init__(self, rows):
        self.t = {}  # (op, impl, w, h, content) -> row
        self.ops = []
        for r in rows:
            if r.get("suite") != "kernel" or r.get("median_ms") is None:
                continue
            self.t[(r["op"], r["impl"], r["width"], r["height"], r["content"])] = r
            if r["op"] not in self.ops:
                self.ops.append(r["op"])
        self.ours = [op for op in self.ops if self.get(op, "histopipe-gpu") or self.get(op, "histopipe-cpu")]

    def get(self, op, impl, w=None, h=None, content=None):
        if w is None:
            return [r for k, r in self.t.items() if k[0] == op and k[1] == impl]
        r = self.t.get((op, impl, w, h, content))
        return r["median_ms"] if r else None

    def cases(self, op):
        keys = {(k[2], k[3], k[4]) for k in self.t if k[0] == op}
        return sorted(keys, key=lambda c: (c[0] * c[1], c[0], c[2]))

    def impls(self, op):
        found = {k[1] for k in self.t if k[0] == op}
        return [i for i in IMPL_ORDER if i in found] + sorted(found - set(IMPL_ORDER))


def ratio(a, b):
    return a / b if a is not None and b else None


def kernel_tables(k):
    out = []
    shown = set()
    for op in k.ours + [o for o in k.ops if o not in k.ours]:
        if op in shown:
            continue
        shown.add(op)
        peer_op = PEER_OP.get(op)
        ours = op in k.ours
        impls = k.impls(op)
        peer_impls = [i for i in k.impls(peer_op) if i not in OURS + ("copy",)] if ours and peer_op else []
        cpu_ratios = [r for r in CPU_RATIOS if r[1].startswith("opencv") or r[1] in peer_impls]
        title = f"### `{op}`" + (f" (peers: their `{peer_op}`)" if ours and peer_op and peer_op != op else "")
        out.append(title)
        out.append("")
        head = ["size", "content"] + [f"{i} ms" for i in impls]
        if ours:
            head += [f"{i} ms" for i in peer_impls if peer_op != op]
            head += ["ours/copy", "GB/s ours", "GB/s copy"] + [f"ours/{i}" for i in peer_impls if i in GPU_PEERS]
            head += [r[2] for r in cpu_ratios]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for w, h, c in k.cases(op):
            cells = [f"{w}x{h}", c] + [fmt_ms(k.get(op, i, w, h, c)) for i in impls]
            if ours:
                cells += [fmt_ms(k.get(peer_op, i, w, h, c)) for i in peer_impls if peer_op != op]
                g = k.get(op, "histopipe-gpu", w, h, c)
                cp = k.get(op, "copy", w, h, c)
                row = k.t.get((op, "histopipe-gpu", w, h, c), {})
                crow = k.t.get((op, "copy", w, h, c), {})
                gbs = lambda nbytes, ms: f"{nbytes / ms / 1e6:.0f}" if nbytes and ms else "–"
                cells += [fmt_ratio(ratio(g, cp)), gbs(row.get("traffic_bytes"), g), gbs(2 * crow.get("copy_bytes", 0), cp)]
                cells += [fmt_ratio(ratio(g, k.get(peer_op, i, w, h, c))) for i in peer_impls if i in GPU_PEERS]
                cells += [fmt_ratio(ratio(k.get(op, mine, w, h, c), k.get(peer_op, i, w, h, c)))
                          for mine, i, _ in cpu_ratios]
            out.append(table_row(cells))
        out.append("")
    return out


def cat_fps(streams, key="fps"):
    """The frames/s (`key`) of the best `cat` run on each stream source of each host: what a
    filter's stream on that host is held to ([`cat_of`]). The edge maps' stream is raw frames of
    the raw stream's size, whose bytes `cat` moves alike whatever they hold: it is held to the raw
    stream's `cat`."""
    best = {}
    for s in streams:
        at = (s.get("source"), s.get("host"))
        if s.get("name") == "cat" and s.get("fps") and s["fps"] > best.get(at, {}).get("fps", 0):
            best[at] = s
    for (source, host), s in list(best.items()):
        if source == "raw":
            best.setdefault(("edges", host), s)
    return {at: s[key] for at, s in best.items() if s.get(key)}


def cat_of(cat, s):
    """The reference `cat_fps` holds stream `s` to: its source's on the host that ran it (a run split
    over calls may get a machine per call, and their pipes differ: 206 and 256 frames/s of cat)."""
    return cat.get((s.get("source"), s.get("host")))


def check(rows, target, case, measured, limit):
    """One target row: measured ratio against the limit (met when measured <= limit)."""
    if measured is None:
        rows.append((target, case, "–", f"≤ {limit:g}", "not measured"))
    elif measured <= limit:
        rows.append((target, case, f"{measured:.3g}", f"≤ {limit:g}", "met"))
    else:
        rows.append((target, case, f"{measured:.3g}", f"≤ {limit:g}", f"missed by {100 * (measured / limit - 1):.0f}%"))


def targets(k, tools, streams):
    rows = []
    big = 3932 * 4000
    for op in HISTOGRAMS:
        cases = [c for c in k.cases(op) if c[0] * c[1] >= big] or [None]
        for c in cases:
            if c is None:
                check(rows, f"`{op}` ≤ CUB HistogramEven (≥ 3932x4000)", "–", None, 1)
                continue
            w, h, content = c
            check(rows, f"`{op}` ≤ CUB HistogramEven", f"{w}x{h} {content}",
                  ratio(k.get(op, "histopipe-gpu", w, h, content), k.get("histogram", "cub", w, h, content)), 1)
        for content in ("real", "random"):
            check(rows, f"`{op}` within 2x of the memory floor", f"16384x16384 {content}",
                  ratio(k.get(op, "histopipe-gpu", 16384, 16384, content), k.get(op, "copy", 16384, 16384, content)), 2)
    for op, peer, label in (("equalize", "equalize", "NPP HistogramEven + LUT"),
                            ("rotate.nearest", "rotate.nearest", "NPP Rotate (nearest)"),
                            ("rotate.bilinear", "rotate.bilinear", "NPP Rotate (linear)"),
                            ("edges", "edges", "NPP FilterCannyBorder"),
                            ("hough", "hough", "NPP FilterHoughLine")):
        cases = k.cases(op) if op in k.ours else []
        if not cases:
            check(rows, f"`{op}` faster than {label}", "–", None, 1)
        for w, h, c in cases:
            check(rows, f"`{op}` faster than {label}", f"{w}x{h} {c}",
                  ratio(k.get(op, "histopipe-gpu", w, h, c), k.get(peer, "npp", w, h, c)), 1)
    for op, limit in CPU_TARGETS.items():
        peer = PEER_OP[op]
        cases = [c for c in k.cases(op)
                 if k.get(op, "histopipe-cpu-1", *c) is not None and k.get(peer, "opencv-1", *c) is not None]
        if not cases:
            check(rows, f"CPU `{op}` within {limit:g}x of OpenCV (1 thread)", "–", None, limit)
        for w, h, c in cases:
            check(rows, f"CPU `{op}` within {limit:g}x of OpenCV (1 thread)", f"{w}x{h} {c}",
                  ratio(k.get(op, "histopipe-cpu-1", w, h, c), k.get(peer, "opencv-1", w, h, c)), limit)
    # Streams: every filter at >= 80% of cat's fps, i.e. cat_fps / fps <= 1.25; auto within 10% of gpu.
    cat = cat_fps(streams)
    by = {(s.get("name"), s.get("impl")): s for s in streams if s.get("fps")}
    for (name, impl), s in by.items():
        if name == "cat" or impl != "gpu":
            continue
        a = by.get((name, "auto"))
        # `auto`, the default backend, as well as `gpu`.
        for t in [s] + ([a] if a else []):
            check(rows, "stream ≥ 80% of `cat` (cat fps / fps ≤ 1.25)", f"{name} {t['impl']}",
                  ratio(cat_of(cat, t), t["fps"]), 1.25)
        check(rows, "stream: auto within 10% of gpu (gpu fps / auto fps ≤ 1.1)", name,
              ratio(s["fps"], a["fps"]) if a else None, 1.1)
    # Single frames: auto no more than 10% slower than cpu on the smallest frame (warm cache).
    small = min((t["width"] * t["height"] for t in tools if t.get("warm_ms")), default=None)
    tt = {(t["tool"], t["impl"], t["width"] * t["height"]): t for t in tools if t.get("warm_ms")}
    for tool in sorted({t["tool"] for t in tools}):
        a, c = tt.get((tool, "histopipe-auto", small)), tt.get((tool, "histopipe-cpu", small))
        if a and c:
            check(rows, "single small frame: auto ≤ 1.1 × cpu (warm)", f"{tool} {a['width']}x{a['height']}",
                  a["warm_ms"] / c["warm_ms"], 1.1)
            check(rows, "single small frame: auto ≤ 1.1 × cpu (empty cache)", f"{tool} {a['width']}x{a['height']}",
                  ratio(a.get("cold_ms"), c.get("cold_ms")), 1.1)
    out = ["| target | case | measured | required | verdict |", "|---|---|---|---|---|"]
    out += [table_row(r) for r in rows]
    return out


def fastest(rows, op, impl, content):
    """The fastest median of `op` by `impl` on `content` at 4096x3112 among `rows` (the turns of
    before.jsonl); None if it has none."""
    times = [r["median_ms"] for r in rows if r.get("suite") == "kernel" and r.get("op") == op and r.get("impl") == impl
             and r.get("content") == content and (r.get("width"), r.get("height")) == (4096, 3112)
             and r.get("median_ms") is not None]
    return min(times) if times else None


def targets_13(k, streams, paired=()):
    """Issue 13's targets: the CPU backend on every core and on one (against the CPU before its
    split, timed in turns beside ours when `paired` has it); the GPU kernels of its part 2 not
    already in issue 6's rows (colhist near the memory floor); the README's pipelines."""
    rows = []
    for op, limit in CPU_ALL_TARGETS.items():
        peer = PEER_OP[op]
        target = (f"CPU `{op}` faster than OpenCV (all threads)" if limit == 1
                  else f"CPU `{op}` within {limit:g}x of OpenCV (all threads, from 2560x1707)")
        cases = [c for c in k.cases(op) if c[0] * c[1] >= (CPU_ALL_FROM if limit != 1 else 0)
                 and k.get(op, "histopipe-cpu", *c) is not None and k.get(peer, "opencv-all", *c) is not None]
        if not cases:
            check(rows, target, "–", None, limit)
        for w, h, c in cases:
            check(rows, target, f"{w}x{h} {c}", ratio(k.get(op, "histopipe-cpu", w, h, c), k.get(peer, "opencv-all", w, h, c)), limit)
    for op, quoted in BEFORE_SPLIT_MS.items():
        for content in ("real", "random"):
            ours, before = fastest(paired, op, "histopipe-cpu-1", content), fastest(paired, op, "histopipe-cpu-before", content)
            if ours is not None and before is not None:
                target = f"CPU `{op}`, 1 thread, no slower than before the split (ad49319, same run)"
                check(rows, target, f"4096x3112 {content}: {ours:.3g} / {before:.3g} ms", ratio(ours, before), 1)
            else:
                target = f"CPU `{op}`, 1 thread, no slower than before the split ({quoted:g} ms)"
                check(rows, target, f"4096x3112 {content}", ratio(k.get(op, "histopipe-cpu-1", 4096, 3112, content), quoted), 1)
    for content in ("real", "random"):
        check(rows, "`colhist` within 1.5x of the memory floor", f"16384x16384 {content}",
              ratio(k.get("colhist", "histopipe-gpu", 16384, 16384, content), k.get("colhist", "copy", 16384, 16384, content)), 1.5)
    # The README's pipelines (a stream's name with a `|`) at half of cat's frames/s or more.
    cat = cat_fps(streams)
    pipelines = [st for st in streams if "|" in (st.get("name") or "") and st.get("fps")]
    if not pipelines:
        check(rows, "README pipeline ≥ 50% of `cat` (cat fps / fps ≤ 2)", "–", None, 2)
    for st in sorted(pipelines, key=lambda st: (st["name"], st["impl"])):
        check(rows, "README pipeline ≥ 50% of `cat` (cat fps / fps ≤ 2)", f"{st['name']} {st['impl']}",
              ratio(cat_of(cat, st), st["fps"]), 2)
    out = ["| target | case | measured | required | verdict |", "|---|---|---|---|---|"]
    out += [table_row(r) for r in rows]
    return out


def agreement_table(rows):
    """Each peer's outputs against OpenCV's on the same input (cpu_peers.py agree)."""
    if not rows:
        return ["(no kornia-rs results in this run: scripts/bench/build-peers builds kornia-peer before packing)"]
    out = ["| peer | op | size | content | same as OpenCV | pixels (bins) that differ | largest difference | "
           "inside the turned frame: differ | largest |", "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["impl"], r["op"], r["width"] * r["height"], r["content"])):
        inside = r.get("interior_mismatch_fraction")
        out.append(table_row([r["impl"], r["op"], f"{r['width']}x{r['height']}", r["content"],
                              "yes" if r["same_as_opencv"] else "no", f"{100 * r['mismatch_fraction']:.3g}%",
                              r["max_abs_diff"], "–" if inside is None else f"{100 * inside:.3g}%",
                              r.get("interior_max_abs_diff", "–")]))
    return out


def tool_table(tools):
    if not tools:
        return ["(not run)"]
    out = ["| tool | size | impl | empty cache ms | warm ms | note |", "|---|---|---|---|---|---|"]
    for t in sorted(tools, key=lambda t: (t["tool"], t["width"] * t["height"], t.get("impl", ""))):
        out.append(table_row([t["tool"], f"{t['width']}x{t['height']} {t['content']}", t.get("impl", ""),
                              fmt_ms(t.get("cold_ms")), fmt_ms(t.get("warm_ms")), t.get("status", "")]))
    return out


def stream_table(streams):
    if not streams:
        return ["(not run)"]
    cat = cat_fps(streams)
    steady_cat = cat_fps(streams, "steady_fps")
    out = ["| stream | input | backend | frames/s | % of cat | first frame s | steady frames/s | steady % of cat | note |",
           "|---|---|---|---|---|---|---|---|---|"]
    for s in streams:
        if s.get("name") == "cat" and s.get("fps") and cat_of(cat, s) != s["fps"]:
            continue
        fps, ref = s.get("fps"), cat_of(cat, s)
        pct = f"{100 * fps / ref:.0f}%" if fps and ref else "–"
        steady, first, steady_ref = s.get("steady_fps"), s.get("first_frame_seconds"), cat_of(steady_cat, s)
        steady_pct = f"{100 * steady / steady_ref:.0f}%" if steady and steady_ref else "–"
        note = s.get("status", "")
        if len({t.get("host") for t in streams}) > 1:
            note = (note + "; " if note else "") + f"host {s.get('host')}"
        out_bytes, in_bytes = s.get("out_bytes_per_frame"), s.get("width", 0) * s.get("height", 0)
        if out_bytes and in_bytes and out_bytes > 1.2 * in_bytes:
            # Such a filter pushes more bytes through its output pipe than cat does: its I/O
            # ceiling is lower than cat's frames per second.
            note = (note + "; " if note else "") + f"writes {out_bytes / in_bytes:.2f}x the input's bytes"
        if s.get("runs_fps"):
            note = (note + "; " if note else "") + "runs " + ", ".join(f"{v:.0f}" for v in s["runs_fps"])
        out.append(table_row([s.get("name", ""), s.get("source", ""), s.get("impl", ""),
                              f"{fps:.1f}" if fps else "–", pct, f"{first:.3f}" if first else "–",
                              f"{steady:.0f}" if steady else "–", steady_pct, note]))
    return out


def series(k):
    """op -> line label -> content -> [(pixels, ms)], for the plot: each of our ops with its peers'
    lines, then the peers' ops none of ours is compared with yet."""
    mapped = {PEER_OP.get(op, op) for op in k.ours}
    ops = k.ours + [o for o in k.ops if o not in k.ours and o not in mapped and o != "copy.frame"]
    data = {}
    for op in ops:
        lines = defaultdict(lambda: defaultdict(list))
        for src_op in dict.fromkeys([op, PEER_OP.get(op, op)]):
            for (o, impl, w, h, c), r in k.t.items():
                if o == src_op and (src_op == op or impl not in OURS + ("copy",)):
                    lines[impl if src_op == op else f"{impl} {src_op}"][c].append((w * h, r["median_ms"]))
        data[op] = lines
    return data


def plot_matplotlib(data, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(data)
    if n == 0:
        return  # no kernel lines (a run with --no-kernels and no kernels.jsonl): no plot
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows), squeeze=False)
    for ax, (op, lines) in zip(axes.ravel(), data.items()):
        for j, (impl, by_content) in enumerate(sorted(lines.items())):
            for c, pts in sorted(by_content.items()):
                pts.sort()
                ax.plot([p for p, _ in pts], [m for _, m in pts], "-o" if c == "random" else "--x", ms=3,
                        color=f"C{j % 10}", label=f"{impl} ({c})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(op)
        ax.set_xlabel("pixels")
        ax.set_ylabel("median ms")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_svg(data, path):
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
    pw, ph, cols = 420, 300, 3
    rows = max(1, math.ceil(len(data) / cols))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{pw * cols}" height="{ph * rows}" font-family="sans-serif" font-size="10">',
             '<rect width="100%" height="100%" fill="white"/>']
    for idx, (op, lines) in enumerate(data.items()):
        ox, oy = (idx % cols) * pw, (idx // cols) * ph
        pts = [p for by in lines.values() for l in by.values() for p in l if p[1] > 0]
        if not pts:
            continue
        x0, x1 = math.log10(min(p for p, _ in pts)), math.log10(max(p for p, _ in pts)) + 1e-9
        y0, y1 = math.log10(min(m for _, m in pts)), math.log10(max(m for _, m in pts)) + 1e-9
        L, R, T, B = ox + 50, ox + pw - 150, oy + 25, oy + ph - 35
        sx = lambda p: L + (math.log10(p) - x0) / max(x1 - x0, 1e-9) * (R - L)
        sy = lambda m: B - (math.log10(m) - y0) / max(y1 - y0, 1e-9) * (B - T)
        parts.append(f'<text x="{ox + pw / 2 - 60}" y="{oy + 15}" font-size="12">{op} (log-log: pixels vs median ms)</text>')
        parts.append(f'<rect x="{L}" y="{T}" width="{R - L}" height="{B - T}" fill="none" stroke="#999"/>')
        parts.append(f'<text x="{L}" y="{B + 14}">{10 ** x0:.3g} px</text><text x="{R - 50}" y="{B + 14}">{10 ** x1:.3g} px</text>')
        parts.append(f'<text x="{ox + 2}" y="{B}">{10 ** y0:.3g}</text><text x="{ox + 2}" y="{T + 8}">{10 ** y1:.3g} ms</text>')
        k = 0
        for j, (impl, by_content) in enumerate(sorted(lines.items())):
            for c, l in sorted(by_content.items()):
                l = sorted(p for p in l if p[1] > 0)
                col = colours[j % len(colours)]
                dash = "" if c == "random" else ' stroke-dasharray="4,3"'
                poly = " ".join(f"{sx(p):.1f},{sy(m):.1f}" for p, m in l)
                parts.append(f'<polyline points="{poly}" fill="none" stroke="{col}" stroke-width="1.5"{dash}/>')
                parts.append(f'<text x="{R + 5}" y="{T + 10 + 11 * k}" fill="{col}">{impl} ({c})</text>')
                k += 1
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))


# Issue 27: our op -> (its peer's op, the peer's impl, the peer's name in the table). The peers'
# ops are named as ours (the same work: scripts/bench/cpu_peers.py, skimage_peers.py).
PEERS_27 = {
    "threshold": ("threshold", "opencv-all", "OpenCV threshold(OTSU)"),
    "threshold.multiotsu": ("threshold.multiotsu", "skimage", "skimage threshold_multiotsu + digitize"),
    "stretch": ("stretch", "opencv-all", "NumPy partition stretch"),
    "equalize.reference": ("equalize.reference", "skimage", "skimage match_histograms"),
    "equalize.mask": ("equalize.mask", "opencv-all", "OpenCV calcHist(mask) + LUT"),
}
# Where OpenCV has the operation, the CPU on all threads at or under it (issue 27).
OPENCV_27 = ["threshold", "equalize.mask"]
FLOOR_27, FLOOR_FROM_27 = 1.5, 3932 * 4000
SECTION_27 = "## Issue 27: thresholds, stretch, matching, masks"


def stage_files(d, stage):
    """The files of a stage of scripts/bench/run in the folder `d`: its JSON lines
    (`*-STAGE.jsonl`, `*-STAGE-*.jsonl`) and its `meta-STAGE.json`."""
    return [n for n in sorted(os.listdir(d)) if n == f"meta-{stage}.json"
            or (n.endswith(".jsonl") and (f"-{stage}." in n or f"-{stage}-" in n))]


def stage_results(dirs, stage):
    """The JSON lines and the merged `meta-STAGE.json` of a stage of scripts/bench/run in `dirs`."""
    rows, meta = [], {}
    for d in dirs:
        for name in stage_files(d, stage):
            if name.endswith(".jsonl"):
                rows += load_jsonl(os.path.join(d, name))
            else:
                with open(os.path.join(d, name)) as f:
                    meta.update(json.load(f))
    return rows, meta


def peer_tables(k, peers, opencv_ops, floor, floor_from):
    """A table per op of `peers` (op -> (the peers' op, peer impl, label)) that was measured: our GPU
    beside the copy floor, our CPU on all threads, the peer; and the checks of its targets: the GPU
    within `floor` times the floor from `floor_from` pixels (no such check with `floor` None), the
    CPU at or under OpenCV's time (all threads) for the ops of `opencv_ops`. Returns (checks, table
    lines)."""
    checks, tables = [], []
    for op, (peer_op, peer, label) in peers.items():
        if not any(k.get(op, i) for i in ("histopipe-gpu", "histopipe-cpu")) and not k.get(peer_op, peer):
            continue
        tables.append(f"### `{op}` (peer: {label}, `{peer}`)")
        tables.append("")
        tables.append(table_row(["size", "content", "GPU ms", "floor ms", "GPU/floor", "CPU ms", "peer ms",
                            "CPU/peer", "GPU/peer"]))
        tables.append("|" + "---|" * 9)
        for w, h, c in sorted(set(k.cases(op)) | set(k.cases(peer_op)), key=lambda x: (x[0] * x[1], x[0], x[2])):
            g, fl = k.get(op, "histopipe-gpu", w, h, c), k.get(op, "copy", w, h, c)
            cpu, pm = k.get(op, "histopipe-cpu", w, h, c), k.get(peer_op, peer, w, h, c)
            tables.append(table_row([f"{w}x{h}", c, fmt_ms(g), fmt_ms(fl), fmt_ratio(ratio(g, fl)), fmt_ms(cpu),
                                fmt_ms(pm), fmt_ratio(ratio(cpu, pm)), fmt_ratio(ratio(g, pm))]))
            if floor is not None and w * h >= floor_from:
                check(checks, f"GPU `{op}` within {floor:g}x of the memory floor (from 3932x4000)",
                      f"{w}x{h} {c}", ratio(g, fl), floor)
            if op in opencv_ops:
                check(checks, f"CPU `{op}` at or under OpenCV (all threads)", f"{w}x{h} {c}", ratio(cpu, pm), 1)
        tables.append("")
    return checks, tables


def thresholds_section(dirs):
    """Issue 27's section (Markdown lines) from the JSON lines in `dirs`."""
    rows, meta = stage_results(dirs, "thresholds")
    k = Kernels(rows)
    devices = [r for r in rows if r.get("suite") == "device"]
    tools = [t for t in rows if t.get("suite") == "tool"]
    L = [SECTION_27, ""]
    L.append(f"Measured by `{meta.get('command', 'scripts/bench/run --stage thresholds')}` (and `--skimage`, the same inputs) "
             f"on {meta.get('gpu', '?')}, {meta.get('cpu', '?')} ({meta.get('threads', '?')} threads), commit "
             f"{meta.get('commit', '?')}, {meta.get('date', '?')}.")
    for extras in dict.fromkeys(", ".join(f"{a} {b}" for a, b in d.items() if a != "suite") for d in devices):
        L.append(f"- {extras}")
    L.append("")
    L.append("GPU: the kernels in process (CUDA events, as the tables below), host waits included where the op "
             "has them (the histogram's download for the host's choice or table, then the table's upload); "
             "floor: a device-to-device copy in the same run of the frame's bytes (of 1.5 frames for "
             "`equalize.mask`, whose mask is read too): bytes read + written at the bandwidth the device "
             "reaches. CPU: our CPU backend on all threads. Peers on the same raw inputs, output identical to "
             "ours (checked): OpenCV on all threads, NumPy and scikit-image on one (their code has no "
             "threads); `match_histograms` returns float64 (ours is its `rint`, in 8 bits). `equalize.reference`'s "
             "reference is the 640x651 random frame; `equalize.mask`'s mask the disc inscribed in the frame.")
    L.append("")
    checks, tables = peer_tables(k, PEERS_27, OPENCV_27, FLOOR_27, FLOOR_FROM_27)
    L += ["### Targets", "", "| target | case | measured | required | verdict |", "|---|---|---|---|---|"]
    L += [table_row(r) for r in checks] + [""] + tables
    if tools:
        L += ["### Whole tools (process wall time, ms)", "",
              "One process per frame as a user runs it (PGM in, file out), first with an empty kernel cache, "
              "then warm (median); the peers' Python one-liners include the interpreter's start and imports.", ""]
        L.append("| tool | size | impl | empty cache ms | warm ms | note |")
        L.append("|---|---|---|---|---|---|")
        for t in sorted(tools, key=lambda t: (t["tool"], t["width"] * t["height"], t.get("impl", ""))):
            L.append(table_row([t["tool"], f"{t['width']}x{t['height']} {t['content']}", t.get("impl", ""),
                                fmt_ms(t.get("cold_ms")), fmt_ms(t.get("warm_ms")), t.get("status", "")]))
        L.append("")
    return L



# Issue 49's kernels and the peer defining each answer (scripts/bench/expected.py).
PEERS_49 = {
    "threshold.mean": ("threshold.mean", "opencv-all", "OpenCV adaptiveThreshold(MEAN_C, 11, 2)"),
    "threshold.gaussian": ("threshold.gaussian", "opencv-all", "OpenCV adaptiveThreshold(GAUSSIAN_C, 11, 2)"),
    "threshold.sauvola": ("threshold.sauvola", "skimage", "skimage img > threshold_sauvola(img)"),
    "pad.reflect101": ("pad.reflect101", "opencv-all", "OpenCV copyMakeBorder(BORDER_REFLECT_101)"),
    "rotate.flip": ("rotate.flip", "opencv-all", "OpenCV flip(img, 1)"),
    "stretch.to_float": ("stretch.to_float", "skimage", "skimage rescale_intensity(out_range=(0, 1))"),
    "equalize.float": ("equalize.float", "skimage", "skimage equalize_hist (float)"),
    "threshold.float": ("threshold.float", "skimage", "skimage f > threshold_otsu(f) (float)"),
}
OPENCV_49 = ["threshold.mean", "threshold.gaussian", "pad.reflect101", "rotate.flip"]
SECTION_49 = "## Issue 49: the thresholds, borders and float inputs people expect"


def expected_section(dirs):
    """Issue 49's section (Markdown lines) from the expected stage's JSON lines in `dirs`."""
    rows, meta = stage_results(dirs, "expected")
    k = Kernels(rows)
    L = [SECTION_49, ""]
    L.append(f"Measured by `{meta.get('command', 'scripts/bench/run --stage expected')}` on {meta.get('gpu', '?')}, "
             f"{meta.get('cpu', '?')} ({meta.get('threads', '?')} threads), commit {meta.get('commit', '?')}, "
             f"{meta.get('date', '?')}.")
    for d in (r for r in rows if r.get("suite") == "device"):
        L.append("- " + ", ".join(f"{a} {b}" for a, b in d.items() if a != "suite"))
    L.append("")
    L.append("Each new kernel of issue 49 beside the peer that defines its answer, on the same inputs (the "
             "benchmark's real frames), the outputs equal to the peer's where the tests say so. GPU: the "
             "kernels in process (CUDA events); floor: a device-to-device copy of the bytes read and "
             "written. CPU: our CPU backend on all threads. Peers: OpenCV on all its threads, scikit-image "
             "on one (its code has none). `zscale`, the L*a*b* conversions and `clahe` on float frames run on "
             "the host for both backends (their manuals give their times).")
    L.append("")
    # The issue sets no speed target: its kernels measured. The check shown is the project's own
    # bar, the CPU backend at or under OpenCV on all threads.
    checks, tables = peer_tables(k, PEERS_49, OPENCV_49, None, 0)
    L += ["### Our CPU against OpenCV", "", "| check | case | measured | required | verdict |",
          "|---|---|---|---|---|"]
    L += [table_row(r) for r in checks] + [""] + tables
    return L


SECTION_28 = "## Issue 28: every direction at once (radon, colhist --angles, deskew)"


def directions_section(dirs):
    """Issue 28's section (Markdown lines) from the directions stage's JSON lines in `dirs`."""
    rows, meta = stage_results(dirs, "directions")
    k = Kernels(rows)
    tools = {r["name"]: r for r in rows if "name" in r}
    L = [SECTION_28, ""]
    L.append(f"Measured by `{meta.get('command', 'scripts/bench/run --stage directions')}` (and `--skimage`, the same inputs) on {meta.get('gpu', '?')}, "
             f"{meta.get('cpu', '?')} ({meta.get('threads', '?')} threads), commit {meta.get('commit', '?')}, "
             f"{meta.get('date', '?')}.")
    L.append("")
    L.append("Kernels: GPU in process with CUDA events (median after warm-up), the frame already on the device; "
             "CPU: our CPU backend on all threads (host clock). Whole commands: process wall time, median of "
             "several runs after one, files on the machine's local disk, CUDA start-up included. scikit-image "
             "(its `radon(image, theta, circle=False)` in process, one thread: its code has none) ran in the "
             "`--skimage` call on the same kind of machine, on inputs made byte for byte alike: its wheels do "
             "not travel beside our binaries. The photos are rocket.jpg and camera.pgm scaled up; the pages, "
             "the fixtures' page.pgm tiled onto an A4 page at 300 dpi and turned by known angles (OpenCV's "
             "`warpAffine`, bilinear, white corners). ImageMagick 6.9.11 (Debian 12's packages, unpacked) ran "
             "one process per page, as its users run it.")
    L.append("")
    def sec(name):
        return tools.get(name, {}).get("median_s")

    def best(*names):
        found = [sec(n) for n in names if sec(n) is not None]
        return min(found) if found else None

    gpu_ms = {op: k.get(op, "histopipe-gpu", *case) for op, case in
              (("radon", (3840, 2160, "real")), ("radon.fine", (1024, 1024, "real")),
               ("colhist.angles", (3840, 2160, "real")))}
    cpu_ms = {op: k.get(op, "histopipe-cpu", *case) for op, case in
              (("radon", (3840, 2160, "real")), ("radon.fine", (1024, 1024, "real")))}
    sk4k, sk_fine = sec("skimage radon photo4k.pgm 180 angles"), sec("skimage radon photo1k.pgm 1800 angles")
    checks = []
    check(checks, "radon GPU kernels (ms)", "3840x2160, 180 angles", gpu_ms["radon"], 25)
    check(checks, "scikit-image's radon / ours on the GPU (at least 100x): GPU/scikit-image", "3840x2160, 180 angles",
          ratio(gpu_ms["radon"], sk4k and sk4k * 1000), 0.01)
    check(checks, "scikit-image's radon / ours (at least 100x): GPU/scikit-image", "1024x1024, 1800 angles",
          ratio(gpu_ms["radon.fine"], sk_fine and sk_fine * 1000), 0.01)
    check(checks, "our CPU (16 threads) / GPU at least 10x: GPU/CPU", "3840x2160, 180 angles",
          ratio(gpu_ms["radon"], cpu_ms["radon"]), 0.1)
    check(checks, "radon, the whole command, file in, NPY out (s)", "3840x2160, 180 angles, --backend gpu",
          sec("radon 3840x2160 180 angles gpu"), 1)
    check(checks, "radon, the whole command (s)", "3840x2160, 180 angles, --backend auto",
          sec("radon 3840x2160 180 angles auto"), 1)
    check(checks, "colhist --angles GPU kernels (ms)", "3840x2160, 0:180:1", gpu_ms["colhist.angles"], 60)
    cube1 = best("colhist --angles 0:180:1 3840x2160 gpu", "colhist --angles 0:180:1 3840x2160 cpu")
    check(checks, "colhist --angles 0:180:1, bound by writing: best backend / cat writing the same bytes",
          "3840x2160 (708 MB)", ratio(cube1, sec("cat writing the cube's bytes (0:180:1)")), 1.5)
    cube5 = best("colhist --angles 0:180:5 -o cube.npy auto")
    check(checks, "the 36-direction loop as one command (--backend auto) / cat writing the same bytes",
          "3840x2160 padded (162 MB)", ratio(cube5, sec("cat writing the cube's bytes (0:180:5)")), 1.5)
    check(checks, "deskew of one A4 page, whole command, --backend auto (s)", "2480x3508, 0.02 degrees",
          sec("deskew one A4 page auto"), 0.5)
    check(checks, "deskew of 100 pages in one process: GPU / CPU on 16 threads (at most 1/3)", "2480x3508 x 100",
          ratio(sec("deskew 100 pages gpu"), sec("deskew 100 pages cpu")), 1 / 3)
    L += ["### Targets", "", "| target | case | measured | required | verdict |", "|---|---|---|---|---|"]
    L += [table_row(r) for r in checks] + [""]
    accuracy = []
    for name, r in tools.items():
        if "found" not in name:
            continue
        if "csv" in r:
            found = [float(line.split(",")[-1]) for line in r["csv"].strip().split("\n")[1:]]
        else:
            found = [float(a) if a else None for a in (r.get("angles") or [r.get("angle")])]
        truth = r["truth"] if isinstance(r["truth"], list) else [r["truth"]]
        errors = sorted(abs(f - t) for f, t in zip(found, truth) if f is not None)
        if errors:
            accuracy.append(table_row([name.split(":")[0], len(errors), f"{errors[len(errors) // 2]:.3f}",
                                       f"{errors[-1]:.3f}", sum(e <= 0.05 for e in errors)]))
    if accuracy:
        L += ["### Deskew accuracy (degrees; pages turned by known angles in -10..10, drawn from the fixtures' page)",
              "", "| tool | pages | median error | largest error | within 0.05 |", "|---|---|---|---|---|"]
        L += accuracy + [""]
    L += ["### Kernels (median ms)", "", "| op | size | GPU ms | CPU ms (all threads) | CPU/GPU |", "|---|---|---|---|---|"]
    for op in ("radon", "radon.fine", "colhist.angles", "deskew"):
        for w, h, c in k.cases(op):
            g, cpu = k.get(op, "histopipe-gpu", w, h, c), k.get(op, "histopipe-cpu", w, h, c)
            L.append(table_row([op, f"{w}x{h} {c}", fmt_ms(g), fmt_ms(cpu), fmt_ratio(ratio(cpu, g))]))
    L.append("")
    L += ["### Whole commands (wall time, median s)", "", "| command | s | note |", "|---|---|---|"]
    for name, r in tools.items():
        if "median_s" in r:
            note = ""
            if r.get("bytes"):
                note = f"{r['bytes'] / 1e6:.0f} MB, {r['bytes'] / r['median_s'] / 1e9:.2f} GB/s"
            if r.get("shape"):
                note = f"{r['shape'][1]}x{r['shape'][0]}, {r['angles']} angles, scikit-image {r.get('version', '')}"
            L.append(table_row([name, f"{r['median_s']:.3f}", note]))
        elif "error" in r:
            L.append(table_row([name, "failed", r["error"][:120]]))
    L.append("")
    return L


SECTION_29 = "## Issue 29: straight lines people can use (hough-segments)"
# The benchmark's contents; any other content of the segments stage's lines is a photo.
CONTENTS_29 = ("real", "random")
BACKENDS_29 = ["histopipe-cpu", "histopipe-gpu", "histopipe-auto", "opencv-python"]
MAX_SEGMENTS_29 = 1 << 16  # hough-segments keeps at most this many a frame (crates/ops/src/hough/segments.rs)


def segments_section(dirs):
    """Issue 29's section (Markdown lines) from the segments stage's JSON lines in `dirs`."""
    rows, meta = stage_results(dirs, "segments")
    k = Kernels(rows)
    op = "hough-segments"
    not_run = {(r["impl"], r["width"], r["height"], r["content"]) for r in rows if r.get("suite") == "not-run"}
    counts = {(r["width"], r["height"], r["content"]): r for r in rows if r.get("suite") == "segments"}
    tools = [r for r in rows if "kind" in r]
    # The benchmark's frames by size, then the photos.
    cases = sorted(set(k.cases(op)) | set(k.cases("hough")) | set(counts),
                   key=lambda c: (c[2] not in CONTENTS_29, c[0] * c[1], c[0], c[2] != "real", c[2]))
    mpx = lambda key: f"{meta[key] / 1e6:.1f} M" if isinstance(meta.get(key), int) else "?"
    cuda = bool(k.get(op, "opencv-cuda"))
    max_lines = meta.get("npp_max_lines")
    L = [SECTION_29, ""]
    L.append(f"Measured by `{meta.get('command', 'scripts/bench/run --stage segments')}` on {meta.get('gpu', '?')}, "
             f"{meta.get('cpu', '?')} ({meta.get('threads', '?')} threads), commit {meta.get('commit', '?')}, "
             f"{meta.get('date', '?')}, OpenCV {meta.get('opencv', '?')}.")
    L.append("")
    L.append("Every implementation ran on the same edge maps: OpenCV's Canny (50/150) of the benchmark's frames "
             "(`real`: camera.pgm scaled up by nearest neighbour; `random`: uniform bytes, about 37% edges) and "
             "of real photos read as gray by OpenCV (rocket.jpg, astronaut.png, and rocket.jpg scaled to "
             "3840x2160, bilinear). Ours: `hough-segments` with its defaults (threshold 50, min length 50, max "
             "gap 10) through histopipe-bench; GPU with CUDA events (median after warm-up), the edge map "
             "already on the device, the votes on the GPU and the walks on the host, the counters read back "
             "in each run; CPU on all threads and, up to "
             f"{mpx('cpu1_max_pixels')} pixels, on one (host clock). OpenCV: "
             "`cv2.HoughLinesP(edges, 1, pi/180, 50, minLineLength=50, maxLineGap=10)` in process on all "
             "threads (`scripts/bench/cpu_peers.py`); on random edge maps of more than "
             f"{mpx('random_max_pixels')} pixels it is not run (seconds a call). NPP has no segment "
             "detector: its `FilterHoughLine` (rho 1 pixel, theta 1 degree, threshold 50, at most "
             f"{max_lines or '?'} lines; `scripts/bench/peers.cu`) finds lines alone, less work than ours. "
             + ("OpenCV's CUDA `HoughSegmentDetector` ran where this cv2 has it (`opencv-cuda`, host clock "
                "up to its stream's end). " if cuda else
                f"OpenCV's CUDA module is absent from this machine's cv2 ({meta.get('opencv_cuda_absent', '?')}): "
                "no `cv2.cuda` segment detector to time. ")
             + "Whole commands: process wall time, median of several runs after one, CUDA start-up included; "
             "the Python script is what a user writes (cv2.imread as gray, Canny 50/150 for a photo, "
             "HoughLinesP, np.savetxt), interpreter start and imports included.")
    L.append("")
    checks = []
    for w, h, c in cases:
        g, cpu, cv = (k.get(op, i, w, h, c) for i in ("histopipe-gpu", "histopipe-cpu", "opencv-all"))
        absent = " (HoughLinesP not run)" if ("opencv-all", w, h, c) in not_run else ""
        check(checks, "GPU `hough-segments` faster than OpenCV HoughLinesP (all threads): GPU/OpenCV",
              f"{w}x{h} {c}{absent}", ratio(g, cv), 1)
    for w, h, c in cases:
        check(checks, "GPU `hough-segments` faster than NPP FilterHoughLine (threshold 50; it finds lines only, "
              "no segments): GPU/NPP", f"{w}x{h} {c}",
              ratio(k.get(op, "histopipe-gpu", w, h, c), k.get("hough", "npp", w, h, c)), 1)
    if cuda:
        for w, h, c in cases:
            check(checks, "GPU `hough-segments` faster than OpenCV CUDA HoughSegmentDetector: GPU/OpenCV CUDA",
                  f"{w}x{h} {c}", ratio(k.get(op, "histopipe-gpu", w, h, c), k.get(op, "opencv-cuda", w, h, c)), 1)
    else:
        checks.append(("GPU `hough-segments` faster than OpenCV CUDA HoughSegmentDetector",
                       f"OpenCV {meta.get('opencv', '?')}: no CUDA module", "–", "≤ 1", "no such peer here"))
    for w, h, c in cases:
        absent = " (HoughLinesP not run)" if ("opencv-all", w, h, c) in not_run else ""
        check(checks, "CPU `hough-segments` (all threads) no slower than HoughLinesP (all threads): CPU/OpenCV",
              f"{w}x{h} {c}{absent}", ratio(k.get(op, "histopipe-cpu", w, h, c), k.get(op, "opencv-all", w, h, c)), 1)
    L += ["### Targets", "", "| target | case | measured | required | verdict |", "|---|---|---|---|---|"]
    L += [table_row(r) for r in checks] + [""]

    def ms(impl, w, h, c, o=op):
        v = k.get(o, impl, w, h, c)
        return "not run" if v is None and (impl, w, h, c) in not_run else fmt_ms(v)

    head = ["size", "content", "GPU ms", "CPU ms (all threads)", "CPU ms (1 thread)", "HoughLinesP ms (all threads)",
            "NPP FilterHoughLine ms"] + (["OpenCV CUDA ms"] if cuda else []) + ["GPU/HoughLinesP", "GPU/NPP",
                                                                               "CPU/HoughLinesP"]
    L += ["### Kernels (median ms)", "", table_row(head), "|" + "---|" * len(head)]
    for w, h, c in cases:
        g, cpu, cv = (k.get(op, i, w, h, c) for i in ("histopipe-gpu", "histopipe-cpu", "opencv-all"))
        cells = [f"{w}x{h}", c, fmt_ms(g), fmt_ms(cpu), ms("histopipe-cpu-1", w, h, c), ms("opencv-all", w, h, c),
                 ms("npp", w, h, c, "hough")] + ([ms("opencv-cuda", w, h, c)] if cuda else [])
        cells += [fmt_ratio(ratio(g, cv)), fmt_ratio(ratio(g, k.get("hough", "npp", w, h, c))), fmt_ratio(ratio(cpu, cv))]
        L.append(table_row(cells))
    L.append("")
    if counts:
        L += ["### Segments found on each edge map", "",
              "Ours on both backends (the tool on the raw edge map; its backends give the same segments by "
              "construction, which the two columns check), HoughLinesP's, "
              "the total length of each one's segments, and the lines NPP's FilterHoughLine returns at the "
              "same threshold.", "",
              "| size | content | edge pixels | ours (CPU) | ours (GPU) | HoughLinesP | length ours / HoughLinesP | "
              "NPP lines |", "|---|---|---|---|---|---|---|---|"]
        for w, h, c in cases:
            r = counts.get((w, h, c))
            if not r:
                continue
            npp = k.t.get(("hough", "npp", w, h, c), {}).get("lines")
            npp = "–" if npp is None else f"{npp} (its cap)" if npp == max_lines else npp
            mine = [r.get("histopipe-" + b, "failed" if f"histopipe-{b}_error" in r else "–") for b in ("cpu", "gpu")]
            mine = [f"{n} (its cap)" if n == MAX_SEGMENTS_29 else n for n in mine]
            L.append(table_row([f"{w}x{h}", c, f"{100 * r['edge_fraction']:.2f}%", *mine,
                                r.get("opencv", "–"),
                                fmt_ratio(ratio(r.get("histopipe-cpu_length"), r.get("opencv_length"))), npp]))
        L.append("")
    if tools:
        by = {}
        for t in tools:
            by.setdefault((t["kind"], t["input"], t["width"], t["height"]), {})[t["impl"]] = t
        L += ["### Whole commands (wall time, median s)", "",
              "`edges PHOTO | hough-segments > segs.csv` (our gray and Canny, then ours) and `hough-segments < "
              "EDGES.pgm > segs.csv` (OpenCV's edge map of the photo, or the benchmark's real frame) with each "
              "`--backend`, next to the Python script doing the same; segments: what each wrote (ours with "
              "`--backend cpu`).", "",
              table_row(["command", "input", "cpu s", "gpu s", "auto s", "Python + OpenCV s", "best ours / OpenCV",
                         "segments ours / OpenCV"]), "|---|---|---|---|---|---|---|---|"]
        for (kind, name, w, h), impls in by.items():
            secs = {i: impls[i].get("median_s") for i in BACKENDS_29 if i in impls}
            ours = [v for i, v in secs.items() if i != "opencv-python" and v is not None]
            cells = [kind, f"{name} {w}x{h}"]
            cells += [f"{secs[i]:.3f}" if secs.get(i) is not None else ("failed" if i in impls else "–")
                      for i in BACKENDS_29]
            mine, theirs = impls.get("histopipe-cpu", {}).get("segments"), impls.get("opencv-python", {}).get("segments")
            cells += [fmt_ratio(ratio(min(ours) if ours else None, secs.get("opencv-python"))),
                      f"{'–' if mine is None else mine} / {'–' if theirs is None else theirs}"]
            L.append(table_row(cells))
        failed = [t for t in tools if "error" in t]
        if failed:
            L += ["", "Failed: " + "; ".join(f"{t['kind']} {t['input']} {t['impl']}: "
                                             f"{t['error'].split(': exit ', 1)[-1].strip()[:160]}" for t in failed)]
        L.append("")
    return L


SECTION_JOBS = "## Jobs: whole commands against a process pool (issue 44)"
# What each job is held to: the Pool script (at most 0.8 of its time), or cat for the cube (at
# most 1.5 times), or for a GPU process's start, the driver and context alone (at most 30 ms more).
TARGET_POOL, TARGET_CAT, TARGET_START_S = 0.8, 1.5, 0.030


def jobs_section(dirs):
    """The jobs stage's section (Markdown lines) from scripts/bench/jobs.py's jobs.jsonl and
    jobs-meta.json in each of `dirs`, a machine each."""
    L = [SECTION_JOBS, ""]
    L.append("Whole commands as a user runs them (`scripts/bench/jobs.py`): process start, files and pipes "
             "included, each beside what that user would run instead, an OpenCV script over the same files "
             "in one process and in a `multiprocessing.Pool` of every core, or `cat` writing the same bytes; "
             "the commands of a job in turn, the median wall time of the runs after a warm-up. The targets: "
             f"every job at most {TARGET_POOL}x the Pool script's time (the best backend's), the cube at most "
             f"{TARGET_CAT}x `cat`'s, `--backend gpu` at most `cpu`'s (within 5%, about the runs' spread), and a GPU process's start within "
             f"{TARGET_START_S * 1000:.0f} ms of the driver and context alone (`scripts/bench/cuda_floor.c`).")
    L.append("")
    L.append("The runs below are kept in docs/bench-data/jobs/, a folder a machine (`--out DIR` of "
             "`scripts/bench/jobs.py`), and earlier runs of this stage in this file's git history.")
    L.append("")
    for d in dirs:
        rows = load_jsonl(os.path.join(d, "jobs.jsonl"))
        meta = {}
        if os.path.exists(os.path.join(d, "jobs-meta.json")):
            with open(os.path.join(d, "jobs-meta.json")) as f:
                meta = json.load(f)
        L.append(f"### {meta.get('cores', '?')} cores ({meta.get('cpu', '?')}), GPU: {meta.get('gpu', '?')}, "
                 f"{meta.get('date', '?')}")
        L.append("")
        L.append(f"{meta.get('files', '?')} files of {meta.get('size', '?')} (the cube: one frame), "
                 f"median of {meta.get('reps', '?')} runs, commit {meta.get('commit', '?')}, {meta.get('date', '?')}.")
        if meta.get("note"):
            # What was learned of the run afterwards, kept with its data.
            L.append("")
            L.append(meta["note"])
        L.append("")
        L.append("| job | command | median s | min-max s | against the peer | target |")
        L.append("| --- | --- | --- | --- | --- | --- |")
        for job in dict.fromkeys(r["job"] for r in rows):
            mine = [r for r in rows if r["job"] == job]
            ours = [r for r in mine if r["command"].startswith("histopipe")]
            by = {r["command"]: r for r in mine}
            best = min(ours, key=lambda r: r["median_s"]) if ours else None
            for r in mine:
                # A row may carry both verdicts (the gpu row, where it is the best).
                verdicts = []
                if r is best and "start" not in job:
                    limit = TARGET_CAT if "cat" in r["vs"] else TARGET_POOL
                    verdicts.append(f"best ≤ {limit}x: " + ("met" if r["ratio"] <= limit else "missed"))
                gpu, cpu = by.get("histopipe --backend gpu"), by.get("histopipe --backend cpu")
                if r is gpu and cpu and "start" not in job:
                    met = gpu["median_s"] <= cpu["median_s"] * 1.05
                    verdicts.append("gpu ≤ cpu: " + ("met" if met else "missed"))
                verdict = "; ".join(verdicts)
                if "start" in job and r is gpu:
                    over = r["median_s"] - by[r["vs"]]["median_s"]
                    side = f"{over * 1000:.0f} ms over" if over >= 0 else f"{-over * 1000:.0f} ms under"
                    verdict = f"{side} the floor: " + ("met" if over <= TARGET_START_S else "missed")
                name = job.replace("|", "\\|")
                L.append(f"| {name} | {r['command']} | {r['median_s']} | {r['min_s']}-{r['max_s']} | "
                         f"{r['ratio']}x {r['vs']} | {verdict} |")
        L.append("")
    return L


SECTION_50 = "## Issue 50: the GPU service"
# Issue 50's targets, whole commands, the service up: a 4K equalize within 10 ms of the CPU's
# process, xargs -P16 of radon over 100 4K files at least 5 times the CPU's speed, and the
# three-stage pipe on one 4K frame no slower than on the CPU.
TARGET_EQUALIZE_S, TARGET_RADON_X = 0.010, 5.0
TARGET_EQUALIZE_MS = f"{TARGET_EQUALIZE_S * 1000:g} ms"


def service_runs(dirs):
    """The service stage's runs in `dirs` (`scripts/bench/service.py --out DIR`): (rows, meta) each."""
    runs = []
    for d in dirs:
        meta = {}
        if os.path.exists(os.path.join(d, "service-meta.json")):
            with open(os.path.join(d, "service-meta.json")) as f:
                meta = json.load(f)
        runs.append((load_jsonl(os.path.join(d, "service.jsonl")), meta))
    return runs


def in_ms(seconds):
    v = seconds * 1000
    return f"{v:.0f} ms" if v >= 100 else f"{v:.1f} ms"


def service_verdict(job, gpu, cpu):
    """Issue 50's verdict of job `job`: the service's row `gpu` against the CPU's `cpu`."""
    if gpu.get("service_frames") != gpu.get("expected_frames"):
        return (f"not measured: the service did {gpu.get('service_frames')} of the "
                f"{gpu.get('expected_frames')} frames its commands had")
    over = gpu["median_s"] - cpu["median_s"]
    if job == "equalize":
        side = f"{in_ms(over)} over the CPU" if over >= 0 else f"{in_ms(-over)} under the CPU"
        if over <= TARGET_EQUALIZE_S:
            return f"met: {side} (target: within {TARGET_EQUALIZE_MS})"
        return f"missed by {in_ms(over - TARGET_EQUALIZE_S)}: {side} (target: within {TARGET_EQUALIZE_MS})"
    if job == "radon":
        per_file = gpu.get("files", 1) != cpu.get("files", 1)
        speed = (cpu["median_s"] / cpu.get("files", 1)) / (gpu["median_s"] / gpu.get("files", 1))
        how = f"{speed:.1f}x the CPU's speed"
        if per_file:
            how += f" per file (the CPU over {cpu.get('files')} files)"
        if speed >= TARGET_RADON_X:
            return f"met: {how} (target: {TARGET_RADON_X:g}x)"
        return f"missed: {how} (target: {TARGET_RADON_X:g}x)"
    share = f"{abs(over) / cpu['median_s'] * 100:.0f}%"
    if over <= 0:
        return f"met: {in_ms(-over)} ({share}) under the CPU (target: no slower)"
    return f"missed by {in_ms(over)} ({share} slower than the CPU; target: no slower)"


def service_section(runs):
    """Issue 50's section (Markdown lines) from runs of scripts/bench/service.py: (rows, meta)
    each, a machine each; a line saying how to measure it where there is none."""
    L = [SECTION_50, ""]
    L.append("Whole commands as a user runs them (`scripts/bench/service.py`, timed as the jobs are): "
             "`--backend gpu` with the GPU service up (started before the timed runs in a private "
             "HISTOPIPE_SERVICE_DIR, stopped after) beside `--backend cpu`, the commands of a job in turn, "
             "the median wall time of the runs after a warm-up. The targets: a 4K `equalize` within "
             f"{TARGET_EQUALIZE_MS} of the CPU's process (the process on the GPU without the service, "
             "HISTOPIPE_SERVICE=off, and the driver and context alone beside them), `xargs -P16 -n1 radon` "
             f"over 100 4K files at least {TARGET_RADON_X:g}x the CPU's speed (radon's default angles, "
             "0:180:1, on both), and `pad | rotate 30 | colhist` on one 4K frame, every stage on the service, "
             "no slower than every stage on the CPU. A run is valid where the service's count of frames grew "
             "by the frames its commands had (none done by a tool itself), and its outputs are checked "
             "against the CPU's bytes in the warm-up.")
    L.append("")
    if not runs:
        L.append("Not measured yet: `scripts/bench/run --stage service` on the GPU machine, its "
                 "$OUT/service kept as docs/bench-data/service/MACHINE-COMMIT.")
        L.append("")
        return L
    L.append("The runs below are kept in docs/bench-data/service/, a folder a run (`--out DIR` of "
             "`scripts/bench/service.py`).")
    L.append("")
    for rows, meta in runs:
        L.append(f"### {meta.get('cores', '?')} cores ({meta.get('cpu', '?')}), GPU: {meta.get('gpu', '?')}, "
                 f"{meta.get('date', '?')}")
        L.append("")
        if meta.get("service_backend") == "cpu":
            L.append("**A test of the stage, not a measurement: the service ran the CPU backend "
                     "(HISTOPIPE_SERVICE_BACKEND=cpu), so `gpu` below is the CPU behind the service.**")
            L.append("")
        L.append(f"Commit {meta.get('commit', '?')}; frames of {meta.get('size', '?')}; median of "
                 f"{meta.get('reps', '?')} runs ({meta.get('radon_reps', '?')} for radon), min and max; "
                 f"`xargs -P{meta.get('parallel', '?')}`; the service: {meta.get('service', '?')}"
                 + ("; **it restarted during the run**" if meta.get("service_restarted") else "")
                 + (f"; {meta['seconds']} s in all" if "seconds" in meta else "") + ".")
        L.append("")
        L.append("| job | command | median s | min-max s | against cpu | target |")
        L.append("| --- | --- | --- | --- | --- | --- |")
        different = []
        for job in dict.fromkeys(r["job"] for r in rows):
            mine = [r for r in rows if r["job"] == job]
            gpu = next((r for r in mine if "service_frames" in r), None)
            cpu = next((r for r in mine if r["command"].startswith("cpu")), None)
            for r in mine:
                against, verdict = "", ""
                if cpu and r is not cpu:
                    # Per file where the CPU's side took fewer files (--radon-cpu-files).
                    mine_s = r["median_s"] / r.get("files", 1) * cpu.get("files", 1)
                    d = mine_s - cpu["median_s"]
                    against = f"{'+' if d >= 0 else '−'}{in_ms(abs(d))} ({mine_s / cpu['median_s']:.2f}x)"
                    if r.get("files", 1) != cpu.get("files", 1):
                        against += f" over {cpu.get('files')} files"
                if r is gpu and cpu:
                    verdict = service_verdict(job, gpu, cpu)
                    if not gpu.get("same_bytes_as_cpu"):
                        different.append(job)
                L.append(table_row([r.get("title", job), r["command"], r["median_s"],
                                    f"{r['min_s']}-{r['max_s']}", against, verdict]))
        L.append("")
        L.append("The service's outputs: " + ("the CPU's bytes in every job." if not different else
                                              "**not the CPU's bytes** in " + ", ".join(different) + "."))
        L.append("")
    return L


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "docs", "bench-data")
# What a section's text is when its data is not kept: docs/bench-data/sections/NAME.md.
TEXTS = os.path.join(DATA, "sections")


class Main:
    """The main run's results (scripts/bench/run without --stage): a folder of kernels.jsonl,
    tools.jsonl, streams.jsonl, meta.json and before.jsonl."""

    def __init__(self, results, plot_name):
        rows = load_jsonl(os.path.join(results, "kernels.jsonl"))
        self.kern = Kernels(rows)
        self.devices = [r for r in rows if r.get("suite") == "device"]
        self.agreement = [r for r in rows if r.get("suite") == "agreement"]
        self.tools = [t for t in load_jsonl(os.path.join(results, "tools.jsonl")) if t.get("suite") == "tool"]
        self.streams = [s for s in load_jsonl(os.path.join(results, "streams.jsonl")) if s.get("suite") == "stream"]
        self.before = load_jsonl(os.path.join(results, "before.jsonl"))
        self.meta = {}
        if os.path.exists(os.path.join(results, "meta.json")):
            with open(os.path.join(results, "meta.json")) as f:
                self.meta = json.load(f)
        self.kornia = next((d.get("kornia_imgproc") for d in self.devices if "kornia_imgproc" in d), None)
        self.plot_name = plot_name


def machine(m, _):
    meta = m.meta
    L = [f"- GPU: {meta.get('gpu', '?')}; driver {meta.get('driver', '?')}; CUDA {meta.get('cuda', '?')}"]
    # One line per distinct program and device (the peers run once per size and operation).
    for extras in dict.fromkeys(", ".join(f"{k} {v}" for k, v in d.items() if k != "suite") for d in m.devices):
        L.append(f"- {extras}")
    L.append(f"- CPU: {meta.get('cpu', '?')}, {meta.get('threads', '?')} threads; commit {meta.get('commit', '?')}; "
             f"{meta.get('date', '')}" + (" (which rows at which commit: the last section)" if meta.get("rows") else ""))
    return L


def method(m, _):
    return [
        "- Kernels: in process, 8-bit frames, CUDA events between back-to-back runs queued behind a "
        "spin kernel (so host launch gaps are not counted), after warm-up; median (and min/p90 in the "
        "JSON) of runs fitted to a time budget. Runs rotate among input/output sets totalling ≥ 256 MiB "
        "(at most 256 sets), so inputs come from device memory, not L2. `copy` is a device-to-device "
        "copy timed in the same run (`copy_bytes`: the frame's bytes, or the output's when larger); "
        "GB/s counts bytes read + written. `real` is tests/fixtures/camera.pgm scaled up by nearest "
        "neighbour, `random` uniform bytes; the peers read the same raw files.",
        "- Peers: CUB `DeviceHistogram::HistogramEven` and NPP (`_Ctx` calls on the same stream) from "
        "`scripts/bench/peers.cu`, timed the same way; NPP `equalize` is HistogramEven + a 256-thread "
        "LUT kernel (OpenCV's formula) + LUTPalette. OpenCV from `scripts/bench/cpu_peers.py` on all "
        "threads (`opencv-all`) and one (`opencv-1`), host clock, next to our CPU backend on all threads "
        "(`histopipe-cpu`) and one (`histopipe-cpu-1`). kornia-rs, the Rust peer "
        f"(`kornia-imgproc` {m.kornia or '0.2, not in this run'}; `kornia-peer` from `scripts/bench/kornia/`, built "
        "by `scripts/bench/build-peers`), the same way on all threads (`kornia-all`) and one (`kornia-1`, "
        "rayon's pool): `compute_histogram`, `equalize_hist`, `warp_affine` (nearest: it takes `f32` "
        "frames only, so the `u8`→`f32`→`u8` conversions are timed with it), `warp_affine_u8` "
        "(bilinear), `spatial_padding`, `canny`, `clahe`; it has no Hough transform. Every CPU peer call "
        "allocates its output. `kornia-cuda`: the same calls on device images (its `cuda` feature), "
        "frame uploaded and output allocated once, host clock up to the stream's synchronisation "
        "(launch overhead included, as for `opencv-cuda`); nearest rotation on an `f32` frame already "
        "on the device (no device cast in kornia), no pad (no CUDA padding). How far each kornia-rs "
        "output is from OpenCV's: the Agreement section. "
        "Hough entries (ours and peers) use "
        "OpenCV's Canny edge map of the frame (Canny 50/150). Every GPU line in the JSON has "
        "`queue_us`, the host time to queue one run: at or above the median, that call is bound by "
        "its launches (or synchronizes inside).",
        "- Whole tools: wall time of one process per frame (PGM file in, file out); empty cache = a "
        "fresh `XDG_CACHE_HOME`; OpenCV one-liners include the interpreter's start and imports.",
        "- Streams: `cat F | FILTER | wc -c` against `cat F | cat | wc -c` (`wc -c` reads its pipe as "
        "`cat > /dev/null` would, and counts the output bytes), each the best of 3 runs (all runs in the note); "
        "`cat` is timed at the start and at the end, and its best on the same host is the reference (a run split over "
        "calls may run on several machines; the edge maps' stream, raw frames of the same size, is held to the raw "
        "stream's `cat`). A filter's time includes "
        "its process start and, for the GPU, the driver's start-up (about 0.2 s of a 300-frame stream's 1 s). "
        "`first frame s` is the same pipeline on the stream's first frame alone (best of 3: start-up and one frame), "
        "and `steady frames/s` what the other frames add: (N - 1) / (stream time - first frame time).",
    ]


def targets_13_section(m, _):
    return ["The CPU backend against OpenCV on the same machine, and the GPU targets of issue 13 not in the "
            "rows above (edges against NPP, the histograms against CUB and rotate bilinear against NPP are "
            "issue 6's rows, unchanged).", ""] + targets_13(m.kern, m.streams, m.before)


def kernels_section(m, _):
    return [f"![time against frame size]({m.plot_name})", ""] + kernel_tables(m.kern)[:-1]


def agreement_section(m, _):
    return ["A peer's output against OpenCV's on the same input (`cpu_peers.py agree`); for rotate, also "
            "2 pixels and more inside the turned frame's edge, where only the arithmetic can differ, "
            "not how the border is sampled.", ""] + agreement_table(m.agreement)


def rows_section(m, _):
    """Which commits measured which rows of the main run, where it was split over calls."""
    return [m.meta["rows"]] if m.meta.get("rows") else None


def text_of(name):
    """A section whose data is not kept: its text in docs/bench-data/sections/NAME.md."""
    def make(_, __):
        path = os.path.join(TEXTS, f"{name}.md")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return f.read().strip("\n").split("\n")
    return make


def stage(name, builder):
    """A stage of scripts/bench/run: made from its JSON lines in docs/bench-data/NAME/ where they
    are kept, else its text (text_of)."""
    def make(m, jobs):
        d = os.path.join(DATA, name)
        if os.path.isdir(d) and stage_files(d, name):
            return builder([d])[2:]
        return text_of(name)(m, jobs)
    return make


def jobs_part(_, runs):
    return jobs_section(runs["jobs"])[2:] if runs["jobs"] else None


def service_part(_, runs):
    return service_section(service_runs(runs["service"]))[2:]


ON_DEVICE = "on the GPU machine at the repository root, after `. .carry/on-device`"
# The report's sections, in order: the title, how to measure it again (Markdown: one command, on the
# GPU machine at the repository root after `. .carry/on-device`; None: nothing to measure), and how
# its lines are made from the data (None: the section is left out). scripts/bench/run writes the
# report from its $OUT; the main run's results are kept in docs/bench-data/ (kernels.jsonl,
# tools.jsonl, streams.jsonl, meta.json, copied from $OUT), a stage's in docs/bench-data/STAGE/
# (`run --stage` copies them there through `report.py --stage`).
SECTIONS = [
    ("Machine", None, machine),
    ("Method", None, method),
    ("Targets (issue 6)", "`scripts/bench/run`", lambda m, _: targets(m.kern, m.tools, m.streams)),
    ("Targets (issue 13)", "`HISTOPIPE_BEFORE=BENCH scripts/bench/run` (BENCH: histopipe-bench built at ad49319)",
     targets_13_section),
    ("Batches (issue 11: one process against one process per file)", "`scripts/bench/batch` (its header says "
     "what it runs)", text_of("batches")),
    ("Several GPUs (issue 15)", "`scripts/bench/gpus` (its header says what it runs)", text_of("gpus")),
    (SECTION_27[3:], "`scripts/bench/run --stage thresholds`, and for scikit-image's side `scripts/bench/run "
     "--stage thresholds --skimage` (no `.carry`: Python and the wheels of scripts/bench/skimage-wheels)",
     stage("thresholds", thresholds_section)),
    (SECTION_49[3:], "`scripts/bench/run --stage expected`", stage("expected", expected_section)),
    (SECTION_28[3:], "`scripts/bench/run --stage directions`, and for scikit-image's side `scripts/bench/run "
     "--stage directions --skimage`", stage("directions", directions_section)),
    (SECTION_29[3:], "`scripts/bench/run --stage segments`", stage("segments", segments_section)),
    ("Issue 30: every kernel ahead of its peer", "by hand, `histopipe-bench kernels --no-cpu --only OP` of the "
     "binary before and the binary after in turn, beside scripts/bench/peers.cu's peer (`scripts/bench/run "
     "--only OP --no-tools --no-streams` times both)", text_of("kernels-30")),
    (SECTION_JOBS[3:], "`scripts/bench/run --stage jobs` on each machine, its $OUT/jobs kept as "
     "docs/bench-data/jobs/MACHINE, then `scripts/bench/report.py --jobs docs/bench-data/jobs/MACHINE...`",
     jobs_part),
    (SECTION_50[3:], "`scripts/bench/run --stage service` on the GPU machine, its $OUT/service kept as "
     "docs/bench-data/service/MACHINE-COMMIT, then `scripts/bench/report.py`", service_part),
    ("Kernels (median ms)", "`scripts/bench/run --no-tools --no-streams`", kernels_section),
    ("Agreement with OpenCV", "`scripts/bench/run --no-tools --no-streams`, with kornia-peer on PATH "
     "(scripts/bench/build-peers)", agreement_section),
    ("Whole tools (process wall time, ms)", "`scripts/bench/run --no-kernels --no-streams`",
     lambda m, _: tool_table(m.tools)),
    ("Streams", "`scripts/bench/run --no-kernels --no-tools`", lambda m, _: stream_table(m.streams)),
    ("Which commits measured which rows", None, rows_section),
]


def anchor(title):
    """The link to a heading, as GitHub makes it."""
    return "#" + re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def report(m, runs):
    """The whole report (its lines) from the main run `m` and the runs of the stages kept a
    machine a folder, `runs` (jobs, service: their folders)."""
    parts = [(title, command, make(m, runs)) for title, command, make in SECTIONS]
    parts = [p for p in parts if p[2] is not None]
    L = ["# Benchmarks", ""]
    L.append("Generated by `scripts/bench/report.py` from the measurements kept in docs/bench-data/; do not edit "
             "by hand: `scripts/bench/report.py` writes this whole file again. Each section says the one command "
             f"that measures it again ({ON_DEVICE}); what it writes to its `$OUT` is kept in docs/bench-data/: "
             "the main run's JSON lines copied there, a stage's by `scripts/bench/report.py --stage NAME OUT`, "
             "the jobs' as docs/bench-data/jobs/MACHINE.")
    L.append("")
    L += [f"- [{title}]({anchor(title)})" for title, _, _ in parts]
    L.append("")
    for title, command, lines in parts:
        L += [f"## {title}", ""]
        if command:
            L += [f"Reproduce: {command}.", ""]
        L += lines + [""]
    return L


def kept_dirs(stage):
    """The runs of `stage` (jobs, service) kept in docs/bench-data/STAGE/, the machine with most
    cores first."""
    found = []
    for d in sorted(glob.glob(os.path.join(DATA, stage, "*", f"{stage}.jsonl"))):
        d = os.path.dirname(d)
        meta = {}
        if os.path.exists(os.path.join(d, f"{stage}-meta.json")):
            with open(os.path.join(d, f"{stage}-meta.json")) as f:
                meta = json.load(f)
        found.append((-int(meta.get("cores") or 0), d))
    return [d for _, d in sorted(found)]


STAGES = {"thresholds": thresholds_section, "expected": expected_section, "directions": directions_section,
          "segments": segments_section}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=DATA, help="the main run's results (default docs/bench-data)")
    p.add_argument("--md", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    p.add_argument("--plot", help="the plot's path without suffix: .png with matplotlib, else .svg "
                   "(default: docs/benchmarks.svg, always the SVG)")
    p.add_argument("--command", help="the command of the main run, where meta.json has none")
    p.add_argument("--jobs", nargs="+", metavar="DIR",
                   help="the jobs section from these runs of scripts/bench/jobs.py --out, a machine each")
    p.add_argument("--service", nargs="+", metavar="DIR",
                   help="issue 50's section from these runs of scripts/bench/service.py --out, a machine each")
    p.add_argument("--stage", nargs="+", metavar=("NAME", "DIR"),
                   help="a stage's JSON lines in DIR... copied into docs/bench-data/NAME/ (see above)")
    a = p.parse_args()
    if a.stage:
        name, dirs = a.stage[0], a.stage[1:]
        if name not in STAGES or not dirs:
            p.error(f"--stage NAME DIR...: NAME one of {', '.join(STAGES)}")
        files = [(d, n) for d in dirs for n in stage_files(d, name)]
        if not files:
            p.error(f"no JSON lines of the {name} stage (*-{name}.jsonl, meta-{name}.json) in {' '.join(dirs)}")
        kept = os.path.join(DATA, name)
        os.makedirs(kept, exist_ok=True)
        # A file of the same name already kept is replaced (a stage measured again); others stay
        # (the --skimage call's beside the first's). Two DIRs' files of one name (a run split
        # over calls) are both kept.
        given = set()
        for i, (d, n) in enumerate(files):
            target = n if n not in given else f"{i}-{n}"
            given.add(n)
            shutil.copyfile(os.path.join(d, n), os.path.join(kept, target))
        print(f"report: the {name} stage's {len(files)} files copied into {kept}")

    if a.plot:
        data = series(Kernels(load_jsonl(os.path.join(a.results, "kernels.jsonl"))))
        plot = a.plot
        try:
            plot_matplotlib(data, plot + ".png")
            plot += ".png"
        except ImportError:
            plot_svg(data, plot + ".svg")
            plot += ".svg"
    else:
        plot = os.path.join(os.path.dirname(os.path.abspath(a.md)), "benchmarks.svg")
        plot_svg(series(Kernels(load_jsonl(os.path.join(a.results, "kernels.jsonl")))), plot)
    plot_name = os.path.basename(plot)
    md_dir = os.path.dirname(os.path.abspath(a.md))
    os.makedirs(md_dir, exist_ok=True)
    plot_in_docs = os.path.join(md_dir, plot_name)
    # No kernel lines, no plot (plot_matplotlib draws none): nothing to copy.
    if os.path.exists(plot) and os.path.abspath(plot) != plot_in_docs:
        with open(plot, "rb") as src, open(plot_in_docs, "wb") as dst:
            dst.write(src.read())

    m = Main(a.results, plot_name)
    if a.command and not m.meta.get("command"):
        m.meta["command"] = a.command
    lines = report(m, {"jobs": a.jobs or kept_dirs("jobs"), "service": a.service or kept_dirs("service")})
    with open(a.md, "w") as f:
        f.write("\n".join(lines))
    print(f"report: wrote {a.md} and {plot}")


if __name__ == "__main__":
    main()
