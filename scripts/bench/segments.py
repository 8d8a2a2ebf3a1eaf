#!/usr/bin/env python3
"""The segments stage of the benchmark (issue 29: hough-segments), on the GPU machine at the
repository root; run by scripts/bench/run:

    . .carry/on-device && scripts/bench/run --stage segments [--quick] [--sizes WxH,...] [--no-kernels | --no-tools]

Inputs: histopipe-bench's frames (real: camera.pgm scaled up; random) of the benchmark's sizes and
their OpenCV Canny (50/150) edge maps (scripts/bench/cpu_peers.py edges), and real photos
(tests/fixtures/rocket.jpg, astronaut.png, and rocket.jpg scaled to 3840x2160) read as gray by
OpenCV with their cv2.Canny(50, 150) edge maps. Then:

- kernels, every implementation on the same edge map: histopipe-bench's `hough-segments` (GPU with
  CUDA events, and our CPU on all threads; on one thread up to --cpu1-max-pixels),
  cv2.HoughLinesP(edges, 1, pi/180, 50, minLineLength=50, maxLineGap=10) on all threads
  (cpu_peers.py), NPP's FilterHoughLine at threshold 50 (scripts/bench/peers.cu, built here with
  nvcc as scripts/bench/run does; a line detector: NPP has no segment detector), and OpenCV's CUDA
  HoughSegmentDetector where this cv2 has its CUDA module (it says so in meta-segments.json otherwise).
  HoughLinesP (and the segment counts) on random edge maps of more than --random-max-pixels are
  not run (seconds a call): recorded as such.
- the segments each finds on each edge map (ours on both backends, OpenCV's, NPP's lines).
- whole commands as a user runs them, process start and CUDA start-up included (median of --runs
  after one): `edges PHOTO | hough-segments > segs.csv` and `hough-segments < EDGEMAP.pgm >
  segs.csv` on each backend, next to a Python script doing the same (cv2.imread, Canny,
  HoughLinesP, the CSV written by np.savetxt), with the segments each wrote.

A step that fails is logged and the next runs. JSON lines into $OUT (default ./bench-out):
kernels-segments.jsonl, counts-segments.jsonl, tools-segments.jsonl, meta-segments.json,
log-segments.txt; `scripts/bench/report.py --stage segments DIR...` keeps them in
docs/bench-data/segments/ and writes the BENCHMARKS section from them (several DIRs: a run split over two calls with --no-tools and --no-kernels).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from directions import wall

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
BENCH = os.path.join(ROOT, "scripts", "bench")
sys.path.insert(0, BENCH)
INPUTS = os.environ.get("INPUTS", "/tmp/histopipe-segments-inputs")
SIZES = "640x651,2560x1707,4096x3112,7680x4320"
QUICK_SIZES = "640x651,4096x3112"
# hough-segments' defaults, and HoughLinesP's parameters (the same).
THRESHOLD, MIN_LENGTH, MAX_GAP, LOW, HIGH = 50, 50, 10, 50, 150
NPP_MAX_LINES = 4096  # peers.cu's default; a count at it means NPP stopped there
# The photos: (name in the report, fixture, size to scale to or None).
PHOTOS = [("rocket.jpg", "rocket.jpg", None), ("astronaut.png", "astronaut.png", None),
          ("rocket.jpg scaled", "rocket.jpg", (3840, 2160))]
# The peer as a user writes it (argv[1] the image, argv[2] the CSV); on an edge map, tools.py's
# one-liner (the same call without Canny).
PEER_PHOTO = ("import cv2,sys,numpy as n;l=cv2.HoughLinesP(cv2.Canny(cv2.imread(sys.argv[1],0),%d,%d),1,n.pi/180,%d,"
              "minLineLength=%d,maxLineGap=%d);n.savetxt(sys.argv[2],l.reshape(-1,4) if l is not None else n.zeros((0,4)),"
              "delimiter=',')" % (LOW, HIGH, THRESHOLD, MIN_LENGTH, MAX_GAP))


def log(out, *words):
    line = "[%s] %s" % (time.strftime("%H:%M:%S"), " ".join(str(w) for w in words))
    print(line, file=sys.stderr, flush=True)
    with open(os.path.join(out, "log-segments.txt"), "a") as f:
        f.write(line + "\n")


def emit(path, **row):
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def step(out, name, fn, *args):
    """Runs one step; a failure is logged (and returned) and the script goes on."""
    log(out, name)
    t = time.perf_counter()
    try:
        fn(*args)
        log(out, name, "done in %.1f s" % (time.perf_counter() - t))
    except Exception as e:  # noqa: BLE001: any failure of a step is recorded, not raised
        log(out, name, "FAILED:", "%s: %s" % (type(e).__name__, str(e)[-600:]))


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def parse_sizes(text):
    return [tuple(int(v) for v in s.split("x")) for s in filter(None, text.split(","))]


def sizes_text(sizes):
    return ",".join("%dx%d" % s for s in sizes)


def write_pgm(path, a):
    import numpy as np
    a = np.ascontiguousarray(a, dtype=np.uint8)
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (a.shape[1], a.shape[0]))
        f.write(a.tobytes())


def run_lines(out, cmd, jsonl, content=None):
    """Runs `cmd` (a list), appends its JSON lines to `jsonl` (content "real" renamed `content`:
    a photo's folder holds it as real), its stderr to the log; an error on a non-zero exit."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    with open(jsonl, "a") as f:
        for line in r.stdout.splitlines():
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            if content and row.get("content") == "real":
                row["content"] = content
            f.write(json.dumps(row) + "\n")
    if r.stderr.strip():
        with open(os.path.join(out, "log-segments.txt"), "a") as f:
            f.write(r.stderr if r.stderr.endswith("\n") else r.stderr + "\n")
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd[:3]), r.returncode, r.stderr.strip()[-300:]))
    return r.stdout


def make_inputs(out, sizes):
    """The benchmark's frames and edge maps (INPUTS/bench), each photo's gray frame, PGM and edge
    map (INPUTS/<photo>/real-WxH.u8, edges-real-WxH.u8, photo.pgm, edges.pgm); kept between calls."""
    import cv2
    bench = os.path.join(INPUTS, "bench")
    subprocess.run(["histopipe-bench", "gen", "--dir", bench, "--sizes", sizes_text(sizes)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_lines(out, [sys.executable, os.path.join(BENCH, "cpu_peers.py"), "edges", "--dir", bench, "--sizes",
                    sizes_text(sizes), "--low", str(LOW), "--high", str(HIGH)], os.devnull)
    for name, fixture, scale in PHOTOS:
        d = photo_dir(name)
        os.makedirs(d, exist_ok=True)
        gray = cv2.imread(os.path.join(FIX, fixture), cv2.IMREAD_GRAYSCALE)
        if gray is None:
            raise RuntimeError("%s: cannot be read" % fixture)
        if scale:
            gray = cv2.resize(gray, scale, interpolation=cv2.INTER_LINEAR)
        h, w = gray.shape
        edges = cv2.Canny(gray, LOW, HIGH, apertureSize=3, L2gradient=False)
        gray.tofile(os.path.join(d, "real-%dx%d.u8" % (w, h)))
        edges.tofile(os.path.join(d, "edges-real-%dx%d.u8" % (w, h)))
        write_pgm(os.path.join(d, "photo.pgm"), gray)
        write_pgm(os.path.join(d, "edges.pgm"), edges)
        with open(os.path.join(d, "size"), "w") as f:
            f.write("%dx%d" % (w, h))


def photo_dir(name):
    return os.path.join(INPUTS, name.replace(" ", "-"))


def photo_size(name):
    with open(os.path.join(photo_dir(name), "size")) as f:
        return parse_sizes(f.read().strip())[0]


def photo_source(name):
    """The file a user gives `edges`: the fixture itself, or the scaled photo's PGM."""
    fixture, scale = next((f, s) for n, f, s in PHOTOS if n == name)
    return os.path.join(photo_dir(name), "photo.pgm") if scale else os.path.join(FIX, fixture)


def edge_inputs(args):
    """(folder, w, h, content file name, content in the report) of every edge map timed."""
    cases = [(os.path.join(INPUTS, "bench"), w, h, c, c) for w, h in args.sizes for c in ("real", "random")]
    cases += [(photo_dir(name), *photo_size(name), "real", name) for name, _, _ in PHOTOS]
    return cases


def slow(args, w, h, content):
    """HoughLinesP (seconds a call on dense random edge maps) is not run past --random-max-pixels."""
    return content == "random" and w * h > args.random_max_pixels


def opencv_cuda():
    """The CUDA devices this cv2 can use (0 without its CUDA module), and why not where none."""
    import cv2
    try:
        n = cv2.cuda.getCudaEnabledDeviceCount()
        return n, None if n else "cv2.cuda.getCudaEnabledDeviceCount() = 0 (OpenCV built without CUDA, or no device)"
    except (AttributeError, cv2.error) as e:
        return 0, "no cv2.cuda module (%s)" % e


def kernels(args):
    out, kern = args.out, os.path.join(args.out, "kernels-segments.jsonl")
    open(kern, "w").close()
    quick = ["--quick"] if args.quick else []
    cases = edge_inputs(args)
    # The NPP peer compiles (CUB takes a while) while ours run.
    peers = os.path.join(args.work, "peers")
    cc = sh("nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1").replace(".", "") or "90"
    nvcc = None
    if shutil.which("nvcc"):
        nvcc = subprocess.Popen(["nvcc", "-O3", "-std=c++17", "-arch=sm_%s" % cc, "-o", peers,
                                 os.path.join(BENCH, "peers.cu"), "-lnppc", "-lnppig", "-lnppif", "-lnppist",
                                 "-lnppicc", "-lnppidei"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    else:
        log(out, "nvcc is not on PATH: no NPP results")

    def ours(folder, sizes, content, label):
        cmd = ["histopipe-bench", "kernels", "--dir", folder, "--sizes", sizes, "--only", "=hough-segments",
               "--content", content] + quick
        failed = None
        try:
            run_lines(out, cmd, kern, label)
        except RuntimeError as e:
            failed = e
            # No GPU (it fails before any CPU line): our CPU alone, so that the CPU columns still fill.
            if not any(r.get("impl") == "histopipe-cpu" and r.get("content") == (label or content)
                       for r in map(json.loads, open(kern))):
                log(out, "kernels: no GPU result (%s): our CPU alone" % str(e)[-200:])
                run_lines(out, ["histopipe-bench", "cpu", "--dir", folder, "--sizes", sizes, "--only",
                                "=hough-segments", "--content", content] + quick, kern, label)
        one = sizes_text([s for s in parse_sizes(sizes) if s[0] * s[1] <= args.cpu1_max_pixels])
        if one:
            run_lines(out, ["histopipe-bench", "cpu", "--dir", folder, "--sizes", one, "--only", "=hough-segments",
                            "--content", content, "--threads", "1"] + quick, kern, label)
        if failed:
            raise failed

    def opencv(folder, sizes, content, label):
        fast = [s for s in parse_sizes(sizes) if not slow(args, *s, content)]
        for w, h in parse_sizes(sizes):
            if slow(args, w, h, content):
                emit(kern, suite="not-run", op="hough-segments", impl="opencv-all", content=label or content,
                     width=w, height=h, why="HoughLinesP on random edges over %d pixels" % args.random_max_pixels)
        if fast:
            run_lines(out, [sys.executable, os.path.join(BENCH, "cpu_peers.py"), "kernels", "--dir", folder,
                            "--sizes", sizes_text(fast), "--content", content, "--ops", "hough-segments",
                            "--threads", "all", "--slow-max-pixels", str(1 << 40)] + quick, kern, label)

    bench = os.path.join(INPUTS, "bench")
    for content in ("real", "random"):
        step(out, "kernels: ours, %s" % content, ours, bench, sizes_text(args.sizes), content, None)
    for name, _, _ in PHOTOS:
        step(out, "kernels: ours, %s" % name, ours, photo_dir(name), sizes_text([photo_size(name)]), "real", name)
    for content in ("real", "random"):
        step(out, "kernels: OpenCV HoughLinesP, %s" % content, opencv, bench, sizes_text(args.sizes), content, None)
    for name, _, _ in PHOTOS:
        step(out, "kernels: OpenCV HoughLinesP, %s" % name, opencv, photo_dir(name), sizes_text([photo_size(name)]),
             "real", name)
    step(out, "kernels: OpenCV CUDA HoughSegmentDetector", opencv_cuda_kernels, args, cases, kern)
    if nvcc is not None:
        log(out, "kernels: NPP FilterHoughLine (threshold %d): waiting for nvcc" % THRESHOLD)
        text, _ = nvcc.communicate()
        if text.strip():
            log(out, "nvcc:", text.strip()[-1500:])
        if nvcc.returncode != 0:
            log(out, "peers.cu did not compile (exit %d): no NPP results" % nvcc.returncode)
        else:
            # One process a case, as scripts/bench/run: a CUDA error is sticky for its process.
            for folder, w, h, content, label in cases:
                step(out, "kernels: NPP FilterHoughLine %dx%d %s" % (w, h, label), run_lines, out,
                     [peers, "--dir", folder, "--sizes", "%dx%d" % (w, h), "--content", content, "--ops", "hough",
                      "--hough-threshold", str(THRESHOLD), "--hough-max-lines", str(NPP_MAX_LINES)] + quick,
                     kern, label if label != content else None)
    step(out, "segments found on each edge map", segments, args, cases)


def opencv_cuda_kernels(args, cases, kern):
    """cv2.cuda's HoughSegmentDetector, where this cv2 has it: the edge map uploaded once, then
    detect and the stream's wait, host clock (cpu_peers.py's timing)."""
    n, why = opencv_cuda()
    if not n:
        log(args.out, "OpenCV CUDA: absent:", why)
        return
    import cv2
    import numpy as np
    from cpu_peers import time_cpu
    det = cv2.cuda.createHoughSegmentDetector(1.0, np.pi / 180, MIN_LENGTH, MAX_GAP, NPP_MAX_LINES, THRESHOLD)
    stream = cv2.cuda.Stream()
    for folder, w, h, content, label in cases:
        e = np.fromfile(os.path.join(folder, "edges-%s-%dx%d.u8" % (content, w, h)), np.uint8).reshape(h, w)
        src, dst = cv2.cuda.GpuMat(), cv2.cuda.GpuMat()
        src.upload(e)

        def run():
            det.detect(src, dst, stream)
            stream.waitForCompletion()

        r = time_cpu(run, args.quick)
        emit(kern, suite="kernel", op="hough-segments", impl="opencv-cuda", content=label, width=w, height=h,
             segments=int(dst.size()[0]) if not dst.empty() else 0, **r)


def csv_segments(path, ours):
    """(segments, total length) of a CSV: ours (a header; length in column 7) or np.savetxt's."""
    import math
    n, total = 0, 0.0
    with open(path) as f:
        for i, line in enumerate(f):
            if (ours and i == 0) or not line.strip():
                continue
            v = line.strip().split(",")
            n += 1
            if ours:
                total += float(v[6])
            else:
                x0, y0, x1, y1 = map(float, v[:4])
                total += math.hypot(x1 - x0, y1 - y0)
    return n, round(total, 1)


def segments(args, cases):
    """The segments ours (both backends, the tool on the raw edge map) and HoughLinesP find on each
    edge map; NPP's lines are in its kernel lines."""
    import cv2
    import numpy as np
    path = os.path.join(args.out, "counts-segments.jsonl")
    open(path, "w").close()
    csv = os.path.join(args.work, "segs.csv")
    for folder, w, h, content, label in cases:
        edges = os.path.join(folder, "edges-%s-%dx%d.u8" % (content, w, h))
        e = np.fromfile(edges, np.uint8).reshape(h, w)
        row = {"suite": "segments", "content": label, "width": w, "height": h,
               "edge_fraction": round(float(np.count_nonzero(e)) / e.size, 5)}
        for backend in ("cpu", "gpu"):
            with open(csv, "w") as o:
                r = subprocess.run(["hough-segments", "--backend", backend, "--raw", "%dx%d" % (w, h), edges], stdout=o,
                                   stderr=subprocess.PIPE, text=True)
            if r.returncode == 0:
                row["histopipe-" + backend], row["histopipe-%s_length" % backend] = csv_segments(csv, True)
            else:
                row["histopipe-%s_error" % backend] = r.stderr.strip()[-300:]
        if slow(args, w, h, content):
            row["opencv"] = "not run"
        else:
            lines = cv2.HoughLinesP(e, 1, np.pi / 180, THRESHOLD, minLineLength=MIN_LENGTH, maxLineGap=MAX_GAP)
            lines = np.zeros((0, 4)) if lines is None else lines.reshape(-1, 4).astype(float)
            row["opencv"] = len(lines)
            row["opencv_length"] = round(float(np.hypot(lines[:, 2] - lines[:, 0], lines[:, 3] - lines[:, 1]).sum()), 1)
        emit(path, **row)
        log(args.out, "segments %dx%d %s:" % (w, h, label), row.get("histopipe-cpu"), row.get("histopipe-gpu"),
            row.get("opencv"))


def whole_commands(args):
    from tools import TOOLS
    out, tools = args.out, os.path.join(args.out, "tools-segments.jsonl")
    open(tools, "w").close()
    runs = args.runs or (3 if args.quick else 7)
    segs = os.path.join(args.work, "segs.csv")
    py = sys.executable

    def timed(kind, label, w, h, impl, cmd):
        if os.path.exists(segs):
            os.remove(segs)
        row = dict(kind=kind, input=label, width=w, height=h, impl=impl, cmd=cmd)
        try:
            med, all_ = wall(cmd, runs)
            row.update(median_s=med, runs=all_)
            row["segments"], row["length"] = csv_segments(segs, impl != "opencv-python")
        except (RuntimeError, OSError, ValueError, IndexError) as e:
            row["error"] = str(e)
        log(out, kind, label, impl, "%.3f s" % row["median_s"] if "median_s" in row else "",
            "%d segments" % row["segments"] if "segments" in row else "", "FAILED: " + row["error"] if "error" in row else "")
        emit(tools, **row)

    inputs = [(name, photo_source(name), os.path.join(photo_dir(name), "edges.pgm"), *photo_size(name))
              for name, _, _ in PHOTOS]
    # The largest real edge map of the benchmark, as a PGM, through the edge-map commands.
    w, h = max((s for s in args.sizes), key=lambda s: s[0] * s[1])
    big = os.path.join(args.work, "edges-real-%dx%d.pgm" % (w, h))
    try:
        import numpy as np
        write_pgm(big, np.fromfile(os.path.join(INPUTS, "bench", "edges-real-%dx%d.u8" % (w, h)),
                                   np.uint8).reshape(h, w))
        maps = [(name, m, pw, ph) for name, _, m, pw, ph in inputs] + [("real", big, w, h)]
    except (OSError, ValueError) as e:
        log(out, "the benchmark's edge map %dx%d: %s" % (w, h, e))
        maps = [(name, m, pw, ph) for name, _, m, pw, ph in inputs]
    for name, photo, _, pw, ph in inputs:
        for be in ("cpu", "gpu", "auto"):
            timed("edges | hough-segments", name, pw, ph, "histopipe-" + be,
                  "edges --backend %s %s | hough-segments --backend %s > %s" % (be, photo, be, segs))
        timed("edges | hough-segments", name, pw, ph, "opencv-python",
              "%s -c \"%s\" %s %s" % (py, PEER_PHOTO, photo, segs))
    for name, m, mw, mh in maps:
        for be in ("cpu", "gpu", "auto"):
            timed("hough-segments < edge map", name, mw, mh, "histopipe-" + be,
                  "hough-segments --backend %s < %s > %s" % (be, m, segs))
        timed("hough-segments < edge map", name, mw, mh, "opencv-python",
              "%s -c \"%s\" %s %s" % (py, TOOLS["hough-segments"]["opencv"], m, segs))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="sizes %s, fewer runs" % QUICK_SIZES)
    p.add_argument("--sizes", help="the benchmark's sizes [default: %s]" % SIZES)
    p.add_argument("--random-max-pixels", type=int, default=4096 * 3112,
                   help="HoughLinesP on random edge maps of at most this many pixels [default: 4096x3112's]")
    p.add_argument("--cpu1-max-pixels", type=int, default=2560 * 1707,
                   help="our CPU on one thread too up to this many pixels [default: 2560x1707's]")
    p.add_argument("--runs", type=int, help="whole commands: runs after the first [default: 7; 3 --quick]")
    p.add_argument("--no-kernels", action="store_true", help="the whole commands alone")
    p.add_argument("--no-tools", action="store_true", help="the kernels and segment counts alone")
    args = p.parse_args()
    args.sizes = parse_sizes(args.sizes or (QUICK_SIZES if args.quick else SIZES))
    args.out = os.path.abspath(os.environ.get("OUT") or "./bench-out")
    os.makedirs(args.out, exist_ok=True)
    os.chdir(ROOT)
    if not shutil.which("histopipe-bench"):
        sys.exit("scripts/bench/run --stage segments: histopipe-bench is not on PATH: run '. .carry/on-device' first")
    cmd = "scripts/bench/run --stage segments" + "".join(" " + a for a in sys.argv[1:])
    log(args.out, cmd, "sizes", sizes_text(args.sizes))
    meta = {
        "gpu": sh("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1"),
        "cpu": sh("lscpu | sed -n 's/^Model name: *//p' | head -1"),
        "threads": os.cpu_count(),
        "commit": os.environ.get("HISTOPIPE_COMMIT") or sh("git rev-parse --short HEAD"),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": cmd,
        "sizes": sizes_text(args.sizes),
        "random_max_pixels": args.random_max_pixels,
        "cpu1_max_pixels": args.cpu1_max_pixels,
        "npp_max_lines": NPP_MAX_LINES,
    }
    try:
        import cv2
        meta["opencv"] = cv2.__version__
        meta["opencv_cuda_devices"], meta["opencv_cuda_absent"] = opencv_cuda()
    except ImportError as e:
        meta["opencv"] = "absent (%s)" % e
    meta["nvcc"] = sh("nvcc --version | sed -n 's/.*release \\([0-9.]*\\).*/\\1/p'")
    with open(os.path.join(args.out, "meta-segments.json"), "w") as f:
        json.dump(meta, f, indent=1)
    args.work = tempfile.mkdtemp(prefix="histopipe-segments.")
    try:
        step(args.out, "inputs", make_inputs, args.out, args.sizes)
        if not args.no_kernels:
            kernels(args)
        if not args.no_tools:
            step(args.out, "whole commands", whole_commands, args)
    finally:
        shutil.rmtree(args.work, ignore_errors=True)
    log(args.out, "done:", " ".join(sorted(os.listdir(args.out))))


if __name__ == "__main__":
    main()
