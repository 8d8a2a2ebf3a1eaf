#!/usr/bin/env python3
"""The directions stage of the benchmark (issue 28: every direction at once), on the GPU machine at
the repository root; run by scripts/bench/run:

    . .carry/on-device && scripts/bench/run --stage directions [--quick]   (1: ours, cat, the loop, ImageMagick)
    scripts/bench/run --stage directions --skimage [--quick]               (2: scikit-image's radon)

1 makes the inputs (a 3840x2160 photo, a 1024x1024 photo, an A4 page at 300 dpi turned by 3.1
  degrees, and 100 such pages turned by known random angles), times histopipe-bench's kernels of
  radon, radon.fine, colhist.angles and deskew (CUDA events, and the CPU on all threads), then the
  whole commands as a user runs them (process start, files, CUDA start-up included): radon to NPY
  on each backend, colhist --angles to a cube next to `cat` writing the same bytes, the 36-direction
  loop of processes against one command, deskew of one page with --backend auto, a batch of 100
  pages on the CPU and the GPU next to `cat` reading them, and ImageMagick's -deskew where its
  packages travel in .before/im/*.deb (unpacked into /tmp/im).
2 needs Python and the wheels of scripts/bench/skimage-wheels in .whl/ (installed into /tmp/site
  when scikit-image is not importable): scikit-image's radon on the same inputs (made again byte
  for byte), in process and as a whole script.

JSON lines into $OUT (default ./bench-out): kernels-directions.jsonl, tools-directions.jsonl,
meta-directions.json (1); skimage-directions.jsonl (2); log-directions.txt.
`scripts/bench/report.py --stage directions DIR...` keeps them in docs/bench-data/directions/ and
writes the BENCHMARKS section from them (scripts/bench/run does so in $OUT's copy).
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
INPUTS = os.environ.get("INPUTS", "/tmp/histopipe-directions-inputs")
PAGE_ANGLE = 3.1
PAGES = 100
IM_PAGES = 20  # ImageMagick takes seconds a page: its accuracy and time on the first 20


def log(out, *words):
    line = "[%s] %s" % (time.strftime("%H:%M:%S"), " ".join(str(w) for w in words))
    print(line, file=sys.stderr, flush=True)
    with open(os.path.join(out, "log-directions.txt"), "a") as f:
        f.write(line + "\n")


def write_pgm(path, a):
    import numpy as np
    a = np.ascontiguousarray(a, dtype=np.uint8)
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (a.shape[1], a.shape[0]))
        f.write(a.tobytes())


def read_pgm(path):
    import numpy as np
    import cv2
    return cv2.imread(path, cv2.IMREAD_UNCHANGED)


def turned_page(page, angle):
    """The page turned by `angle` degrees (counter-clockwise as displayed), white corners."""
    import cv2
    h, w = page.shape
    m = cv2.getRotationMatrix2D(((w - 1) / 2, (h - 1) / 2), angle, 1.0)
    return cv2.warpAffine(page, m, (w, h), flags=cv2.INTER_LINEAR, borderValue=255)


def a4_page():
    """An A4 page at 300 dpi (2480x3508) of the fixtures' scanned text, tiled, white margins."""
    import numpy as np
    text = read_pgm(os.path.join(FIX, "page.pgm"))
    page = np.full((3508, 2480), 255, np.uint8)
    th, tw = text.shape
    y = 150
    while y + th <= 3508 - 150:
        x = 150
        while x + tw <= 2480 - 150:
            page[y:y + th, x:x + tw] = text
            x += tw
        y += th
    return page


def make_inputs(quick):
    """The inputs, made the same way (the same bytes) by both calls."""
    import numpy as np
    import cv2
    os.makedirs(INPUTS, exist_ok=True)
    done = os.path.join(INPUTS, "done")
    if os.path.exists(done):
        return
    rocket = cv2.imread(os.path.join(FIX, "rocket.jpg"), cv2.IMREAD_GRAYSCALE)
    write_pgm(os.path.join(INPUTS, "photo4k.pgm"), cv2.resize(rocket, (3840, 2160), interpolation=cv2.INTER_LINEAR))
    camera = read_pgm(os.path.join(FIX, "camera.pgm"))
    write_pgm(os.path.join(INPUTS, "photo1k.pgm"), cv2.resize(camera, (1024, 1024), interpolation=cv2.INTER_LINEAR))
    page = a4_page()
    write_pgm(os.path.join(INPUTS, "page.pgm"), turned_page(page, PAGE_ANGLE))
    rng = np.random.default_rng(28)
    angles = rng.uniform(-10, 10, PAGES).round(2)
    os.makedirs(os.path.join(INPUTS, "pages"), exist_ok=True)
    for i, a in enumerate(angles):
        write_pgm(os.path.join(INPUTS, "pages", "p%03d.pgm" % i), turned_page(page, float(a)))
    with open(os.path.join(INPUTS, "pages", "angles.json"), "w") as f:
        json.dump([float(a) for a in angles], f)
    open(done, "w").close()


def wall(cmd, runs, env=None, shell=True):
    """Median wall time (s) of `runs` runs of `cmd` after one warm-up run, and all of them."""
    times = []
    for i in range(runs + 1):
        t = time.perf_counter()
        r = subprocess.run(cmd, shell=shell, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t
        if r.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (cmd, r.returncode, r.stderr.decode(errors="replace")[-400:]))
        if i > 0:
            times.append(dt)
    return statistics.median(times), times


def emit(path, **row):
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def ours(args):
    out = args.out
    runs = 3 if args.quick else 7
    tools = os.path.join(out, "tools-directions.jsonl")
    kern = os.path.join(out, "kernels-directions.jsonl")
    for p in (tools, kern):
        open(p, "w").close()
    meta = {
        "gpu": subprocess.run("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1", shell=True,
                              capture_output=True, text=True).stdout.strip(),
        "cpu": subprocess.run("lscpu | sed -n 's/^Model name: *//p' | head -1", shell=True, capture_output=True,
                              text=True).stdout.strip(),
        "threads": os.cpu_count(),
        "commit": os.environ.get("HISTOPIPE_COMMIT") or subprocess.run("git rev-parse --short HEAD", shell=True,
                                                                         capture_output=True, text=True).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    json.dump(meta, open(os.path.join(out, "meta-directions.json"), "w"), indent=1)
    log(out, "inputs")
    make_inputs(args.quick)
    work = tempfile.mkdtemp(prefix="histopipe-directions.")
    try:
        log(out, "kernels: histopipe-bench")
        gen = os.path.join(work, "bench-inputs")
        subprocess.run(["histopipe-bench", "gen", "--dir", gen, "--sizes", "3840x2160,1024x1024,2480x3508"], check=True,
                       stdout=subprocess.DEVNULL)
        for only, sizes in (("=radon", "3840x2160,1024x1024"), ("radon.fine", "1024x1024"),
                            ("colhist.angles", "3840x2160"), ("deskew", "2480x3508")):
            cmd = ["histopipe-bench", "kernels", "--dir", gen, "--sizes", sizes, "--only", only, "--content", "real",
                   "--cpu-max-pixels", str(2480 * 3508)]
            if args.quick:
                cmd.append("--quick")
            r = subprocess.run(cmd, capture_output=True, text=True)
            with open(kern, "a") as f:
                f.write(r.stdout)
            if r.returncode != 0:
                log(out, "kernels", only, "FAILED:", r.stderr.strip()[-300:])
        photo4k = os.path.join(INPUTS, "photo4k.pgm")
        photo1k = os.path.join(INPUTS, "photo1k.pgm")
        page = os.path.join(INPUTS, "page.pgm")
        npy = os.path.join(work, "s.npy")

        def timed(name, cmd, n=runs, **extra):
            try:
                med, all_ = wall(cmd, n)
                emit(tools, name=name, cmd=cmd, median_s=med, runs=all_, **extra)
                log(out, name, "%.3f s" % med)
            except RuntimeError as e:
                emit(tools, name=name, cmd=cmd, error=str(e))
                log(out, name, "FAILED", e)

        log(out, "whole commands: radon")
        for be in ("gpu", "auto", "cpu"):
            timed("radon 3840x2160 180 angles %s" % be, "radon --backend %s -o %s %s" % (be, npy, photo4k),
                  n=3 if be == "cpu" else runs)
            timed("radon 1024x1024 1800 angles %s" % be,
                  "radon --angles 0:180:0.1 --backend %s -o %s %s" % (be, npy, photo1k), n=3 if be == "cpu" else runs)
        log(out, "whole commands: colhist --angles")
        cube = os.path.join(work, "cube.npy")
        copy = os.path.join(work, "copy.npy")
        for be in ("gpu", "cpu"):
            timed("colhist --angles 0:180:1 3840x2160 %s" % be,
                  "colhist --angles 0:180:1 --backend %s -o %s %s" % (be, cube, photo4k), n=3)
        size = os.path.getsize(cube) if os.path.exists(cube) else 0
        timed("cat writing the cube's bytes (0:180:1)", "cat %s > %s" % (cube, copy), n=3, bytes=size)
        os.remove(copy) if os.path.exists(copy) else None
        padded = os.path.join(work, "padded.pgm")
        subprocess.run("pad --backend cpu < %s > %s" % (photo4k, padded), shell=True, check=True)
        loop = "for a in $(seq 0 5 175); do rotate --backend %s $a < %s | colhist --backend %s > %s/h$a.csv; done"
        for be in ("cpu", "gpu"):
            timed("loop of 36 processes rotate|colhist %s" % be, loop % (be, padded, be, work), n=3 if be == "cpu" else 1)
        for be in ("gpu", "cpu", "auto"):
            timed("colhist --angles 0:180:5 -o cube.npy %s" % be,
                  "colhist --angles 0:180:5 --backend %s -o %s %s" % (be, cube, padded))
        size = os.path.getsize(cube) if os.path.exists(cube) else 0
        timed("cat writing the cube's bytes (0:180:5)", "cat %s > %s" % (cube, copy), bytes=size)
        log(out, "whole commands: deskew")
        for be in ("auto", "cpu", "gpu"):
            timed("deskew one A4 page %s" % be, "deskew --backend %s %s > %s/d.pgm" % (be, page, work))
        r = subprocess.run("deskew --backend cpu --format csv %s" % page, shell=True, capture_output=True, text=True)
        emit(tools, name="deskew one A4 page: angle found", truth=PAGE_ANGLE, csv=r.stdout.strip())
        pages = sorted(glob.glob(os.path.join(INPUTS, "pages", "p*.pgm")))
        outdir = os.path.join(work, "out")
        os.makedirs(outdir, exist_ok=True)
        for be in ("cpu", "gpu", "auto"):
            timed("deskew 100 pages %s" % be,
                  "deskew --backend %s -o '%s/{stem}.pgm' %s" % (be, outdir, " ".join(pages)), n=3)
        timed("cat reading the 100 pages", "cat %s > /dev/null" % " ".join(pages), n=3)
        timed("cat copying the 100 pages", "cat %s > %s/all.pgm" % (" ".join(pages), work), n=3)
        truth = json.load(open(os.path.join(INPUTS, "pages", "angles.json")))
        r = subprocess.run("deskew --backend gpu --format csv %s" % " ".join(pages), shell=True, capture_output=True,
                           text=True)
        emit(tools, name="deskew 100 pages: angles found", truth=truth, csv=r.stdout)
        ims = sorted(glob.glob(os.path.join(ROOT, ".before", "im", "*.deb")))
        if ims:
            log(out, "ImageMagick")
            root = "/tmp/im"
            for d in ims:
                subprocess.run(["dpkg", "-x", d, root], check=True)
            libs = ":".join(sorted({os.path.dirname(p) for p in glob.glob(root + "/**/*.so*", recursive=True)}))
            conv = glob.glob(root + "/usr/bin/convert-im6.q16")
            modules = glob.glob(root + "/usr/lib/x86_64-linux-gnu/ImageMagick-6*/modules-Q16")
            if conv and modules:
                env = ("LD_LIBRARY_PATH=%s MAGICK_CONFIGURE_PATH=%s/etc/ImageMagick-6 MAGICK_CODER_MODULE_PATH=%s/coders "
                       "MAGICK_CODER_FILTER_PATH=%s/filters " % (libs, root, modules[0], modules[0]))
                timed("ImageMagick -deskew 40% one A4 page",
                      env + "%s %s -deskew 40%% %s/im.pgm" % (conv[0], page, work))
                r = subprocess.run(env + "%s %s -deskew 40%% -format '%%[deskew:angle]' info:" % (conv[0], page),
                                   shell=True, capture_output=True, text=True)
                emit(tools, name="ImageMagick one A4 page: angle found", truth=PAGE_ANGLE, angle=r.stdout.strip(),
                     err=r.stderr.strip()[-300:])
                found = []
                for p in pages[:IM_PAGES]:
                    r = subprocess.run(env + "%s %s -deskew 40%% -format '%%[deskew:angle]' info:" % (conv[0], p),
                                       shell=True, capture_output=True, text=True)
                    found.append(r.stdout.strip())
                emit(tools, name="ImageMagick %d pages: angles found" % IM_PAGES, truth=truth[:IM_PAGES], angles=found)
                timed("ImageMagick -deskew 40%% %d pages (one process each)" % IM_PAGES,
                      "for p in %s; do %s%s $p -deskew 40%% %s/im.pgm; done" % (" ".join(pages[:IM_PAGES]), env, conv[0],
                                                                              work), n=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(out, "done")


def skimage(args):
    out = args.out
    try:
        import skimage  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", "/tmp/site"] + glob.glob(os.path.join(ROOT, ".whl", "*.whl")),
                       check=True)
        sys.path.insert(0, "/tmp/site")
        os.environ["PYTHONPATH"] = "/tmp/site" + (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    import numpy as np
    import skimage
    from skimage.transform import radon
    make_inputs(args.quick)
    path = os.path.join(out, "skimage-directions.jsonl")
    open(path, "w").close()
    for name, theta in (("photo1k.pgm", np.arange(0, 180, 1.0)), ("photo4k.pgm", np.arange(0, 180, 1.0)),
                        ("photo1k.pgm", np.arange(0, 180, 0.1))):
        img = read_pgm(os.path.join(INPUTS, name))
        n = 1 if (args.quick or name == "photo4k.pgm" or len(theta) > 180) else 3
        times = []
        for _ in range(n):
            t = time.perf_counter()
            radon(img, theta=theta, circle=False)
            times.append(time.perf_counter() - t)
        emit(path, name="skimage radon %s %d angles" % (name, len(theta)), shape=list(img.shape), angles=len(theta),
             median_s=statistics.median(times), runs=times, version=skimage.__version__, threads="1 (radon is serial)")
        log(out, "skimage radon", name, len(theta), "%.2f s" % statistics.median(times))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--skimage", action="store_true")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    args.out = os.path.abspath(os.environ.get("OUT") or "./bench-out")
    os.makedirs(args.out, exist_ok=True)
    os.chdir(ROOT)
    (skimage if args.skimage else ours)(args)


if __name__ == "__main__":
    main()
