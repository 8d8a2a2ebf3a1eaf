#!/usr/bin/env python3
"""The "jobs" stage of the benchmark (issue 44): whole commands as a user runs them, process
start, files and pipes included, beside what that user would run instead: an OpenCV script over
the same files in one process and in a multiprocessing.Pool of every core, and `cat` writing the
same bytes where the job is output-bound.

    scripts/bench/jobs.py [--files N] [--size WxH] [--reps R] [--backends cpu,gpu,auto] [--out DIR]
                          [--only JOB,...] [--pool-only]

The tools are taken from PATH; Python needs NumPy and OpenCV. Inputs are made from the photos in
tests/fixtures/ (each file its own crop and scale, so no two are alike). Each command runs REPS
times, the commands of one job in turn (A B C A B C ...), and the median wall time is reported,
with the ratio to the Pool script's. Every run's outputs are checked (the number of files). Writes
a markdown table to stdout and, with --out, jobs.md and jobs.jsonl there.
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

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The user's OpenCV scripts: the same work per file, written as one would. OPENCV_POOL runs the
# same function over a multiprocessing.Pool of every core.
OPENCV = r'''
import sys, os, glob, multiprocessing as mp
import numpy as np, cv2
cv2.setNumThreads(1 if sys.argv[2] == "pool" else cv2.getNumberOfCPUs())
job, mode, out = sys.argv[1], sys.argv[2], sys.argv[3]
files = sys.argv[4:]
def stem(p): return os.path.splitext(os.path.basename(p))[0]
def equalize(p, ext):
    bgr = cv2.imread(p, cv2.IMREAD_COLOR)
    y, cr, cb = cv2.split(cv2.cvtColor(bgr, cv2.COLOR_BGR2YCrCb))
    bgr = cv2.cvtColor(cv2.merge([cv2.equalizeHist(y), cr, cb]), cv2.COLOR_YCrCb2BGR)
    cv2.imwrite(os.path.join(out, stem(p) + ext), bgr)
def segments(p):
    gray = cv2.imread(p, cv2.IMREAD_GRAYSCALE)
    lines = cv2.HoughLinesP(cv2.Canny(gray, 50, 150), 1, np.pi / 180, 50, minLineLength=50, maxLineGap=10)
    with open(os.path.join(out, stem(p) + ".csv"), "w") as f:
        f.write("x1,y1,x2,y2\n")
        for l in (np.asarray(lines).reshape(-1, 4) if lines is not None else []):
            f.write(",".join(map(str, l)) + "\n")
def stretch(p):
    a = np.load(p)
    lo, hi = np.percentile(a, [0.175, 99.825])
    s = np.clip((a - lo) / (hi - lo), 0, 1)
    cv2.imwrite(os.path.join(out, stem(p) + ".png"), np.round(s * 65535).astype(np.uint16))
def threshold(p):
    gray = cv2.imread(p, cv2.IMREAD_GRAYSCALE)
    _, t = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
    cv2.imwrite(os.path.join(out, stem(p) + ".pgm"), t)
def equalize_png(p): equalize(p, ".png")
def equalize_jpg(p): equalize(p, ".jpg")
work = {
    "equalize-png": equalize_png,
    "equalize-jpg": equalize_jpg,
    "segments": segments,
    "stretch": stretch,
    "threshold": threshold,
}[job]
if mode == "pool":
    with mp.Pool(os.cpu_count()) as pool:
        pool.map(work, files, chunksize=1)
else:
    for p in files:
        work(p)
'''


def make_inputs(work, n, width, height, kinds=("jpg", "pgm", "npy")):
    """N colour JPEGs and N gray PGMs of WxH, and N float32 .npy, from the fixtures' photos (those
    of `kinds`: scripts/bench/service.py takes the PGMs alone)."""
    import numpy as np
    import cv2

    photos = [cv2.imread(os.path.join(REPO, "tests/fixtures", f), cv2.IMREAD_COLOR)
              for f in ("rocket.jpg", "astronaut.png", "camera.png")]
    paths = {kind: [] for kind in kinds}
    for kind in paths:
        os.makedirs(os.path.join(work, kind), exist_ok=True)
    rng = np.random.default_rng(44)
    for i in range(n):
        photo = photos[i % len(photos)]
        h, w = photo.shape[:2]
        # A crop of 60-100% of the photo, scaled to the size: each file its own picture.
        f = rng.uniform(0.6, 1.0)
        cw, ch = int(w * f), int(h * f)
        x, y = rng.integers(0, w - cw + 1), rng.integers(0, h - ch + 1)
        img = cv2.resize(photo[y:y + ch, x:x + cw], (width, height), interpolation=cv2.INTER_CUBIC)
        name = f"photo{i:03d}"
        if "jpg" in paths:
            p = os.path.join(work, "jpg", name + ".jpg")
            cv2.imwrite(p, img, [cv2.IMWRITE_JPEG_QUALITY, 90])
            paths["jpg"].append(p)
        if "pgm" in paths:
            p = os.path.join(work, "pgm", name + ".pgm")
            cv2.imwrite(p, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
            paths["pgm"].append(p)
        if "npy" in paths:
            p = os.path.join(work, "npy", name + ".npy")
            np.save(p, cv2.cvtColor(img, cv2.COLOR_BGR2GRAY).astype(np.float32) * 0.37 - 12.5)
            paths["npy"].append(p)
    return paths


def timed(cmd, out, expect, refuse=None):
    """Wall seconds of `cmd` (a shell command line), run with a fresh `out` folder; checks that
    it succeeded and left `expect` files (None: not checked), and that its standard error does not
    hold `refuse` (scripts/bench/service.py: a tool that left the GPU service)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    start = time.perf_counter()
    done = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {cmd}\n{done.stderr.decode()[-2000:]}")
    if refuse is not None and refuse in done.stderr.decode(errors="replace"):
        raise SystemExit(f"{cmd}: '{refuse}' on its standard error:\n{done.stderr.decode()[-2000:]}")
    if expect is not None and len(os.listdir(out)) != expect:
        raise SystemExit(f"{cmd}: {len(os.listdir(out))} outputs, not {expect}")
    return took


def machine(args):
    """What the report says of the run: the machine, the commit, the settings."""
    def run(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    gpu = run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]).replace("\n", ", ")
    commit = os.environ.get("HISTOPIPE_COMMIT") or run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    return {"cpu": model, "cores": os.cpu_count(), "gpu": gpu or "none", "commit": commit or "?",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "files": args.files,
            "size": args.size, "reps": args.reps}


def quote(paths):
    return " ".join(paths)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--size", default="3840x2160")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--backends", default="cpu,gpu,auto")
    ap.add_argument("--out")
    ap.add_argument("--only", default="", help="comma-separated job names")
    ap.add_argument("--pool-only", action="store_true",
                    help="leave out the one-process OpenCV scripts (the slowest commands by far)")
    args = ap.parse_args()
    width, height = map(int, args.size.split("x"))
    backends = [b for b in args.backends.split(",") if b]
    work = tempfile.mkdtemp(prefix="histopipe-jobs.")
    try:
        inputs = make_inputs(work, args.files, width, height)
        out = os.path.join(work, "out")
        script = os.path.join(work, "opencv_job.py")
        with open(script, "w") as f:
            f.write(OPENCV)
        py = sys.executable
        n = args.files
        jpg, pgm, npy = (quote(inputs[k]) for k in ("jpg", "pgm", "npy"))
        # One padded frame for the cube: the first photo, gray.
        subprocess.run(["bash", "-c", f"pad {inputs['pgm'][0]} > {work}/one-padded.pgm"], check=True)
        jobs = [
            ("equalize -o out/{stem}.png, colour JPEGs",
             {b: (f"equalize --backend {b} -o '{out}/{{stem}}.png' {jpg}", n) for b in backends},
             [("OpenCV, one process", f"{py} {script} equalize-png one {out} {jpg}", n),
              ("OpenCV, Pool", f"{py} {script} equalize-png pool {out} {jpg}", n)]),
            ("equalize -o out/{stem}.jpg, colour JPEGs",
             {b: (f"equalize --backend {b} -o '{out}/{{stem}}.jpg' {jpg}", n) for b in backends},
             [("OpenCV, one process", f"{py} {script} equalize-jpg one {out} {jpg}", n),
              ("OpenCV, Pool", f"{py} {script} equalize-jpg pool {out} {jpg}", n)]),
            ("edges FILES | hough-segments -o out/{stem}.csv",
             {b: (f"edges --backend {b} {jpg} | hough-segments --backend {b} -o '{out}/{{stem}}.csv'", n)
              for b in backends},
             [("OpenCV, one process", f"{py} {script} segments one {out} {jpg}", n),
              ("OpenCV, Pool", f"{py} {script} segments pool {out} {jpg}", n)]),
            ("stretch --saturate 0.35 -o out/{stem}.png, float32 .npy, 16-bit PNG",
             {b: (f"stretch --backend {b} --saturate 0.35 --depth 16 -o '{out}/{{stem}}.png' {npy}", n)
              for b in backends},
             [("NumPy and OpenCV, one process", f"{py} {script} stretch one {out} {npy}", n),
              ("NumPy and OpenCV, Pool", f"{py} {script} stretch pool {out} {npy}", n)]),
            ("threshold -o out/{stem}.pgm, gray PGMs",
             {b: (f"threshold --backend {b} -o '{out}/{{stem}}.pgm' {pgm}", n) for b in backends},
             [("OpenCV, one process", f"{py} {script} threshold one {out} {pgm}", n),
              ("OpenCV, Pool", f"{py} {script} threshold pool {out} {pgm}", n)]),
            ("colhist --angles 0:180:5 -o cube.npy, one padded frame",
             {b: (f"colhist --backend {b} --angles 0:180:5 -o {out}/cube.npy {work}/one-padded.pgm", 1)
              for b in backends},
             [("cat writing the same bytes", f"cat {work}/cube.npy > {out}/cube.npy", 1)]),
        ]
        if "gpu" in backends:
            # A GPU process's start beside its floor: the driver and the primary context alone.
            floor = os.path.join(work, "cuda_floor")
            subprocess.run(["cc", "-O2", "-o", floor, os.path.join(HERE, "cuda_floor.c"), "-ldl"], check=True)
            import cv2

            cv2.imwrite(f"{work}/small.pgm", cv2.imread(inputs["pgm"][0], cv2.IMREAD_GRAYSCALE)[:64, :64])
            jobs.append(("a GPU process's start: rotate 0 on a 64x64 frame",
                         {b: (f"rotate 0 --backend {b} -o {out}/small.pgm {work}/small.pgm", 1)
                          for b in backends},
                         [("driver and context alone (cuda_floor.c)", f"{floor} && touch {out}/x", 1)]))
        only = [o for o in args.only.split(",") if o]
        rows = []
        for title, ours, theirs in jobs:
            if only and not any(o in title for o in only):
                continue
            if "cube" in title:
                # The bytes cat writes: ours, made once beforehand.
                first = next(iter(ours.values()))[0]
                subprocess.run(["bash", "-c", first.replace(f"{out}/cube.npy", f"{work}/cube.npy")], check=True)
            if args.pool_only:
                theirs = [t for t in theirs if "one process" not in t[0]]
            commands = [(f"histopipe --backend {b}", c, e) for b, (c, e) in ours.items()] + theirs
            times = {name: [] for name, _, _ in commands}
            for name, cmd, expect in commands:  # one warm-up each (page cache, kernel cache)
                timed(cmd, out, expect)
            for _ in range(args.reps):
                for name, cmd, expect in commands:
                    times[name].append(timed(cmd, out, expect))
            base = statistics.median(times[theirs[-1][0]])
            for name, _, _ in commands:
                t = statistics.median(times[name])
                rows.append({"job": title, "command": name, "median_s": round(t, 3),
                             "min_s": round(min(times[name]), 3), "max_s": round(max(times[name]), 3),
                             "vs": theirs[-1][0], "ratio": round(t / base, 2)})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        table = [f"{args.files} files of {args.size} (the cube: one frame), {os.cpu_count()} cores; "
                 f"median of {args.reps} runs after a warm-up, wall seconds; ratio to the last "
                 "peer command of the job (the Pool script, or cat)", "",
                 "| job | command | median s | min-max s | ratio |", "| --- | --- | --- | --- | --- |"]
        for r in rows:
            job = r["job"].replace("|", "\\|")
            table.append(f"| {job} | {r['command']} | {r['median_s']} | {r['min_s']}-{r['max_s']} | {r['ratio']}x |")
        text = "\n".join(table) + "\n"
        print(text)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "jobs-meta.json"), "w") as f:
                json.dump(machine(args), f)
            with open(os.path.join(args.out, "jobs.md"), "w") as f:
                f.write(text)
            with open(os.path.join(args.out, "jobs.jsonl"), "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
