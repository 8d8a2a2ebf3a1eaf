#!/usr/bin/env python3
"""OpenCV, histopipe's CPU peer, on the inputs histopipe-bench writes.

    cpu_peers.py edges --dir D --sizes WxH,... [--content real,random] [--low 50 --high 150]
        writes D/edges-<content>-<W>x<H>.u8, cv2.Canny's edge map of each input (0 or 255): the
        one edge map every Hough implementation (ours, NPP's, OpenCV's) is timed on.
    cpu_peers.py kernels --dir D --sizes ... [--threads all|1] [--ops ...] [--quick] ...
        times the OpenCV calls in process (time.perf_counter, warm-up, median of runs fitted to a
        time budget) and prints one JSON line per case, the format of histopipe-bench.
    cpu_peers.py agree --dir D --outputs O --sizes ... [--impl kornia] [--ops ...] ...
        compares another peer's outputs, O/<impl>-<op>-<content>-<W>x<H>.u8 (a histogram: 256
        little-endian u32 counts, .u32; kornia-peer --outputs writes them), with OpenCV's output
        of the same call on D's input, and prints one JSON line per case ("suite": "agreement"):
        same_as_opencv, the fraction of pixels (or bins) that differ, the largest difference (for
        rotate, also 2 pixels and more inside the turned frame's edge: interior_*).

The operations and their OpenCV calls (the parameters are the benchmark's, see scripts/bench/run):
histogram calcHist (256 bins), equalize equalizeHist, rotate.nearest / rotate.bilinear
warpAffine about the centre, pad copyMakeBorder to the diagonal, edges Canny (aperture 3, L1),
hough HoughLines(edges, 1, pi/180, T) on the edge map, hough-segments HoughLinesP(edges, 1, pi/180,
50, minLineLength=50, maxLineGap=10) on the edge map (hough-segments' defaults), clahe createCLAHE() (clip 40, 8x8 tiles)
.apply, threshold threshold(THRESH_BINARY + THRESH_OTSU), equalize.mask calcHist with the
benchmark's disc mask (frames.py) + equalizeHist's table (NumPy, 256 entries) + LUT (OpenCV has no
masked equalizeHist: its calls composed, as docs/equalize.md states the rule), stretch NumPy's
order statistics (np.partition: histopipe's --saturate 0.35 cuts exactly) and map. With --threads all, clahe is also timed on the GPU through cv2.cuda.createCLAHE (impl
opencv-cuda: upload once, then apply on the GpuMat and wait for its stream, host clock) when this
OpenCV has its CUDA module and a device; otherwise it says so on stderr.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

import cv2
import numpy as np

import frames

OPS = ["histogram", "equalize", "equalize.mask", "rotate", "pad", "edges", "hough", "hough-segments", "clahe", "stretch", "threshold"]


def parse_sizes(text):
    out = []
    for s in filter(None, text.split(",")):
        w, h = s.split("x")
        out.append((int(w), int(h)))
    return out


def load(dir_, prefix, content, w, h):
    path = os.path.join(dir_, f"{prefix}{content}-{w}x{h}.u8")
    if not os.path.exists(path):
        return None
    a = np.fromfile(path, dtype=np.uint8)
    if a.size != w * h:
        return None
    return a.reshape(h, w)


def inputs(args, who):
    """(content, w, h, frame) of each size of args.sizes and content of args.content, in that
    order, from args.dir; a missing one is said on stderr, by `who`, and skipped."""
    for w, h in args.sizes:
        for content in args.content:
            img = load(args.dir, "", content, w, h)
            if img is None:
                print(f"{who}: {content}-{w}x{h}.u8 missing, skipped", file=sys.stderr)
                continue
            yield content, w, h, img


def ceil_sqrt(n):
    r = math.isqrt(n)
    return r if r * r == n else r + 1


WARM_S = 0.1


def time_cpu(fn, quick):
    """A first run, 100 ms of warm-up runs, then runs fitted to the budget; one run only when a
    run takes over a second (the warm-up is histopipe-bench's: timing.rs, WARM_MS). With the
    timings, the process's minor page faults per timed run (as histopipe-bench counts them)."""
    budget, min_runs, max_runs = (60.0, 3, 30) if quick else (300.0, 5, 100)
    t = time.perf_counter()
    fn()
    first = (time.perf_counter() - t) * 1e3
    faults = None
    if first > 1000:
        samples = [first]
    else:
        warm = time.perf_counter()
        while time.perf_counter() - warm < WARM_S:
            fn()
        runs = max(min_runs, min(max_runs, int(budget / max(first, 1e-3))))
        if first > 50:
            runs = min_runs
        samples = []
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(runs):
            t = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t) * 1e3)
        faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / runs
    samples.sort()
    n = len(samples)
    return ({} if faults is None else {"faults": faults}) | {
        "median_ms": statistics.median(samples),
        "min_ms": samples[0],
        "p90_ms": samples[round((n - 1) * 0.9)],
        "runs": n,
    }


def cases(img, args):
    """(op, function) pairs for one frame; hough needs the edge map, given separately."""
    h, w = img.shape
    if "histogram" in args.ops:
        yield "histogram", lambda: cv2.calcHist([img], [0], None, [256], [0, 256])
    if "equalize" in args.ops:
        yield "equalize", lambda: cv2.equalizeHist(img)
    if "equalize.mask" in args.ops:
        mask = frames.disc_mask(w, h)
        yield "equalize.mask", lambda: equalize_masked(img, mask)
    if "rotate" in args.ops:
        m = cv2.getRotationMatrix2D(((w - 1) / 2.0, (h - 1) / 2.0), args.angle, 1.0)
        for name, flag in (("rotate.nearest", cv2.INTER_NEAREST), ("rotate.bilinear", cv2.INTER_LINEAR)):
            yield name, (lambda flag=flag: cv2.warpAffine(img, m, (w, h), flags=flag, borderValue=0))
    if "pad" in args.ops:
        d = ceil_sqrt(w * w + h * h)
        left, top = (d - w) // 2, (d - h) // 2
        yield "pad", lambda: cv2.copyMakeBorder(
            img, top, d - h - top, left, d - w - left, cv2.BORDER_CONSTANT, value=0
        )
    if "edges" in args.ops:
        yield "edges", lambda: cv2.Canny(img, args.low, args.high, apertureSize=3, L2gradient=False)
    if "clahe" in args.ops:
        clahe = cv2.createCLAHE()
        yield "clahe", lambda: clahe.apply(img)
    if "stretch" in args.ops:
        yield "stretch", lambda: stretch(img)
    if "threshold" in args.ops:
        yield "threshold", lambda: cv2.threshold(img, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)[1]


def stretch(img):
    """histopipe's `stretch --saturate 0.35 --depth 8` in NumPy: the cuts are the order
    statistics s_k and s_(N-1-k), k = floor(N * 0.35 / 200) (np.partition, as np.percentile
    partitions too; docs/stretch.md), then rint(clip((v - lo) / (hi - lo), 0, 1) * 255)."""
    flat = img.ravel()
    n = flat.size
    k = min(int(n * 0.35 / 200), (n - 1) // 2)
    part = np.partition(flat, [k, n - 1 - k])
    lo, hi = float(part[k]), float(part[n - 1 - k])
    t = np.clip((img - lo) / max(hi - lo, 1e-9), 0, 1)
    return np.rint(t * 255).astype(np.uint8)


def equalize_masked(img, mask):
    """equalize --mask as OpenCV's calls: calcHist with the mask, equalizeHist's table from it
    (scale 255 / (N - cdf_min), rounded), the LUT."""
    hist = cv2.calcHist([img], [0], mask, [256], [0, 256]).ravel().astype(np.int64)
    cdf = np.cumsum(hist)
    nz = cdf[cdf > 0]
    cdf_min, total = (nz[0], cdf[-1]) if nz.size else (0, 0)
    if total == cdf_min:
        lut = np.arange(256, dtype=np.uint8)
    else:
        scale = np.float32(255.0 / (total - cdf_min))
        lut = np.clip(np.rint((np.maximum(cdf - cdf_min, 0)).astype(np.float32) * scale), 0, 255).astype(np.uint8)
    return cv2.LUT(img, lut)


def cuda_devices():
    """CUDA devices this OpenCV can use: 0 without its CUDA module (pip's wheels have none)."""
    try:
        return cv2.cuda.getCudaEnabledDeviceCount()
    except (AttributeError, cv2.error):
        return 0


def cuda_cases(img, args):
    """(op, function) pairs on the GPU through cv2.cuda, the input uploaded once."""
    if "clahe" in args.ops:
        stream = cv2.cuda.Stream()
        src = cv2.cuda.GpuMat()
        src.upload(img)
        dst = cv2.cuda.GpuMat(img.shape, cv2.CV_8UC1)
        clahe = cv2.cuda.createCLAHE()

        def run():
            clahe.apply(src, stream, dst)
            stream.waitForCompletion()

        yield "clahe", run


def kernels(args):
    threads = os.cpu_count() if args.threads == "all" else int(args.threads)
    cv2.setNumThreads(threads)
    impl = "opencv-all" if args.threads == "all" else f"opencv-{threads}"
    print(json.dumps({"suite": "device", "impl": impl, "opencv": cv2.__version__, "threads": threads}), flush=True)
    cuda = args.threads == "all" and "clahe" in args.ops and cuda_devices() > 0
    if args.threads == "all" and "clahe" in args.ops and not cuda:
        print(f"cpu_peers: OpenCV {cv2.__version__} has no CUDA module or device: no opencv-cuda clahe", file=sys.stderr)
    for content, w, h, img in inputs(args, "cpu_peers"):
        base = {"suite": "kernel", "impl": impl, "content": content, "width": w, "height": h, "threads": threads}
        todo = list(cases(img, args))
        if "hough" in args.ops and w * h <= args.slow_max_pixels:
            edges = load(args.dir, "edges-", content, w, h)
            if edges is not None:
                todo.append(("hough", lambda edges=edges: cv2.HoughLines(edges, 1, np.pi / 180, args.hough_threshold)))
        if "hough-segments" in args.ops and w * h <= args.slow_max_pixels:
            edges = load(args.dir, "edges-", content, w, h)
            if edges is not None:
                todo.append(("hough-segments", lambda edges=edges: cv2.HoughLinesP(edges, 1, np.pi / 180, 50, minLineLength=50, maxLineGap=10)))
        for op, fn in todo:
            r = time_cpu(fn, args.quick)
            print(json.dumps({**base, "op": op, **r}), flush=True)
        if cuda:
            for op, fn in cuda_cases(img, args):
                r = time_cpu(fn, args.quick)
                print(json.dumps({**base, "impl": "opencv-cuda", "op": op, **r}), flush=True)


def agree(args):
    """One agreement line per output of args.impl found in args.outputs."""
    for w, h in args.sizes:
        for content in args.content:
            img = load(args.dir, "", content, w, h)
            if img is None:
                continue
            for op, fn in cases(img, args):
                stem = os.path.join(args.outputs, f"{args.impl}-{op}-{content}-{w}x{h}")
                if os.path.exists(stem + ".u32"):
                    peer = np.fromfile(stem + ".u32", dtype="<u4").astype(np.int64)
                    cv = fn().ravel().astype(np.int64)  # calcHist: 256 float32 counts
                elif os.path.exists(stem + ".u8"):
                    cv = fn().astype(np.int64)
                    peer = np.fromfile(stem + ".u8", dtype=np.uint8).astype(np.int64)
                else:
                    continue
                if peer.size != cv.size:
                    print(f"cpu_peers: {stem}: {peer.size} values, OpenCV's has {cv.size}", file=sys.stderr)
                    continue
                diff = np.abs(peer - cv.ravel())
                line = {"suite": "agreement", "impl": args.impl, "reference": f"opencv {cv2.__version__}",
                        "op": op, "content": content, "width": w, "height": h,
                        "same_as_opencv": bool(diff.max() == 0),
                        "mismatch_fraction": float(np.count_nonzero(diff) / diff.size),
                        "max_abs_diff": int(diff.max())}
                if op.startswith("rotate."):
                    # Away from the turned frame's edge (2 pixels and more inside it), where only
                    # the arithmetic can differ, not how the border is sampled.
                    m = cv2.getRotationMatrix2D(((w - 1) / 2.0, (h - 1) / 2.0), args.angle, 1.0)
                    full = cv2.warpAffine(np.full_like(img, 255), m, (w, h), flags=cv2.INTER_LINEAR, borderValue=0)
                    inside = cv2.erode((full == 255).astype(np.uint8), np.ones((5, 5), np.uint8)).ravel().astype(bool)
                    d = diff[inside]
                    line["interior_mismatch_fraction"] = float(np.count_nonzero(d) / max(d.size, 1))
                    line["interior_max_abs_diff"] = int(d.max()) if d.size else 0
                print(json.dumps(line), flush=True)


def edges(args):
    for w, h in args.sizes:
        for content in args.content:
            path = os.path.join(args.dir, f"edges-{content}-{w}x{h}.u8")
            if os.path.exists(path) and os.path.getsize(path) == w * h:
                continue
            img = load(args.dir, "", content, w, h)
            if img is None:
                print(f"cpu_peers: {content}-{w}x{h}.u8 missing, no edge map", file=sys.stderr)
                continue
            e = cv2.Canny(img, args.low, args.high, apertureSize=3, L2gradient=False)
            e.tofile(path)
            print(f"cpu_peers: wrote {path} ({np.count_nonzero(e) / e.size:.3%} edge pixels)", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["kernels", "edges", "agree"])
    p.add_argument("--dir", default="bench-inputs")
    p.add_argument("--sizes", type=parse_sizes, default=parse_sizes("640x651,2560x1707,3932x4000,4096x3112,7680x4320,16384x16384"))
    p.add_argument("--content", type=lambda s: s.split(","), default=["real", "random"])
    p.add_argument("--ops", type=lambda s: s.split(","), default=OPS)
    p.add_argument("--threads", default="all", help="all, or a number (cv2.setNumThreads)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--outputs", help="agree: the folder of the other peer's outputs")
    p.add_argument("--impl", default="kornia", help="agree: the other peer's file prefix")
    p.add_argument("--angle", type=float, default=30.0)
    p.add_argument("--low", type=int, default=50)
    p.add_argument("--high", type=int, default=150)
    p.add_argument("--hough-threshold", type=int, default=200)
    p.add_argument("--slow-max-pixels", type=int, default=4096 * 3112,
                   help="HoughLines only on frames of at most this many pixels (it takes seconds beyond)")
    args = p.parse_args()
    {"kernels": kernels, "edges": edges, "agree": agree}[args.command](args)


if __name__ == "__main__":
    main()
