#!/usr/bin/env python3
"""Whole-tool benchmarks: process times of each filter, and frame streams through filters and pipelines.

    tools.py tools --dir D --work W [--sizes ...] [--backends gpu,cpu,auto] [--only pad,...] [--quick]
        each filter on one PGM frame of each size: first with an empty kernel cache (a fresh
        XDG_CACHE_HOME), then warm (median of runs), per backend; next to an OpenCV Python
        one-liner doing the same work (interpreter start and imports included, as a user pays).
    tools.py streams --dir D --work W [--frames 300] [--backends gpu,auto] [--only ...]
        N frames of 3840x2160 8-bit through each filter (raw frames, --raw) and through the three
        pipelines (a multi-frame PGM stream, so the geometry metadata flows), in frames per
        second, next to `cat` through the same pipe (the I/O ceiling).
    tools.py variants --dir D --work W [--sizes ...] [--names ...] [--peers opencv-python,skimage-python]
                      [--no-ours]
        issue 27's paths (VARIANTS: threshold, multi-Otsu, stretch, equalize --reference) as `tools`
        times a filter, next to their peers' one-liners (OpenCV/NumPy, scikit-image).

Tools missing from PATH are reported as missing, not failed: the benchmark runs on any subset.
Every result is one JSON line on stdout.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def registry_tools():
    """Every tool of tools.toml, the registry, in its order (read by scripts/registry)."""
    r = subprocess.run([os.path.join(ROOT, "scripts", "registry"), "tools"], check=True, capture_output=True, text=True)
    return r.stdout.split()


def registry_field(tool, field):
    """A tool's FIELD in tools.toml, one value a line (read by scripts/registry)."""
    r = subprocess.run([os.path.join(ROOT, "scripts", "registry"), tool, field], check=True, capture_output=True, text=True)
    return r.stdout.splitlines()


def registry_spec(name):
    """What a tool of the registry is run with (its `bench` arguments in tools.toml), what it
    reads (`input`: frame, edges or accumulator), and its OpenCV one-liner (OPENCV) or None."""
    return {"args": " ".join(registry_field(name, "bench")).split(),
            "input": (registry_field(name, "input") or ["frame"])[0],
            "opencv": None, **OPENCV.get(name, {})}


# The OpenCV one-liner doing the same work as a tool of the registry (argv[1] the input PGM, argv[2]
# the output file; `opencv_input`: what it reads, where not what the tool reads); a tool without
# one is timed alone. The work is that of the tool's arguments in tools.toml (`bench`): rotate by
# 30 degrees, stretch to 8 bits, Canny's thresholds 50 and 150, OpenCV's HoughLines(img, 1,
# pi/180, 200).
STRETCH = ("import cv2,sys,numpy as n;i=cv2.imread(sys.argv[1],0);N=i.size;k=min(int(N*.35/200),(N-1)//2);"
           "p=n.partition(i.ravel(),[k,N-1-k]);l,h=float(p[k]),float(p[N-1-k]);"
           "cv2.imwrite(sys.argv[2]+'.pgm',n.rint(n.clip((i-l)/max(h-l,1e-9),0,1)*255).astype(n.uint8))")
CANNY = "--low 50 --high 150"
HOUGH_T = 200
OPENCV = {
    "pad": {
        "opencv": "import cv2,sys,math;i=cv2.imread(sys.argv[1],0);h,w=i.shape;d=math.isqrt(w*w+h*h-1)+1;"
        "l,t=(d-w)//2,(d-h)//2;cv2.imwrite(sys.argv[2]+'.pgm',cv2.copyMakeBorder(i,t,d-h-t,l,d-w-l,cv2.BORDER_CONSTANT,value=0))",
    },
    "rotate": {
        "opencv": "import cv2,sys;i=cv2.imread(sys.argv[1],0);h,w=i.shape;"
        "m=cv2.getRotationMatrix2D(((w-1)/2,(h-1)/2),30,1);cv2.imwrite(sys.argv[2]+'.pgm',cv2.warpAffine(i,m,(w,h),flags=cv2.INTER_NEAREST))",
    },
    "colhist": {
        "opencv": "import cv2,sys,numpy as n;i=cv2.imread(sys.argv[1],0);h,w=i.shape;"
        "c=n.bincount((i.astype(n.int64)*w+n.arange(w)).ravel(),minlength=256*w).reshape(256,w);"
        "n.savetxt(sys.argv[2],c,fmt='%d',delimiter=',')",
    },
    "cdf": {
        "opencv": "import cv2,sys,numpy as n;i=cv2.imread(sys.argv[1],0);c=cv2.calcHist([i],[0],None,[256],[0,256]).ravel();"
        "s=n.cumsum(c);n.savetxt(sys.argv[2],n.c_[n.arange(256),c,s,s/s[-1]],delimiter=',')",
    },
    # radon: OpenCV has no Radon transform: scikit-image's radon is the peer (VARIANTS, skimage_peers.py).
    "equalize": {
        "opencv": "import cv2,sys;cv2.imwrite(sys.argv[2]+'.pgm',cv2.equalizeHist(cv2.imread(sys.argv[1],0)))",
    },
    # NumPy's stretch, ImageJ's default 0.35 % saturated: the order statistics the tool's cuts
    # are (np.partition), then the map; the same output (cpu_peers.py's stretch).
    "stretch": {"opencv": STRETCH},
    "edges": {
        "opencv": "import cv2,sys;cv2.imwrite(sys.argv[2]+'.pgm',cv2.Canny(cv2.imread(sys.argv[1],0),50,150))",
    },
    "clahe": {
        "opencv": "import cv2,sys;cv2.imwrite(sys.argv[2]+'.pgm',cv2.createCLAHE().apply(cv2.imread(sys.argv[1],0)))",
    },
    "threshold": {
        "opencv": "import cv2,sys;i=cv2.imread(sys.argv[1],0);"
        "cv2.imwrite(sys.argv[2]+'.pgm',cv2.threshold(i,0,255,cv2.THRESH_BINARY+cv2.THRESH_OTSU)[1])",
    },
    # deskew: ImageMagick's -deskew is the peer (scripts/bench/deskew_peer.sh); OpenCV has none.
    "hough-segments": {
        "opencv": "import cv2,sys,numpy as n;l=cv2.HoughLinesP(cv2.imread(sys.argv[1],0),1,n.pi/180,50,"
        "minLineLength=50,maxLineGap=10);"
        "n.savetxt(sys.argv[2],l.reshape(-1,4) if l is not None else n.zeros((0,4)),delimiter=',')",
        "opencv_input": "edges",
    },
    "hough-lines": {
        # OpenCV has no separate accumulator: its one-liner votes and selects (hough-vote + hough-lines).
        "opencv": "import cv2,sys,numpy as n;l=cv2.HoughLines(cv2.imread(sys.argv[1],0),1,n.pi/180,%d);"
        "n.savetxt(sys.argv[2],l.reshape(-1,2) if l is not None else n.zeros((0,2)),delimiter=',')" % HOUGH_T,
        "opencv_input": "edges",
    },
}

# Issue 27's paths as a user runs them (`tools.py variants`): the tool with these arguments, and
# its peers' one-liners (argv[1] the input PGM, argv[2] the output file, argv[3] the reference PGM):
# OpenCV and NumPy (`opencv-python`), scikit-image (`skimage-python`, where its wheels are).
VARIANTS = {
    "threshold": {"args": [], "opencv-python": OPENCV["threshold"]["opencv"]},
    "threshold --method multiotsu:3": {
        "args": ["--method", "multiotsu:3"],
        "skimage-python": "import cv2,sys,numpy as n;from skimage.filters import threshold_multiotsu as t;"
        "i=cv2.imread(sys.argv[1],0);cv2.imwrite(sys.argv[2]+'.pgm',n.digitize(i,t(i,classes=3)).astype(n.uint8))",
    },
    "stretch --depth 8": {"args": ["--depth", "8"], "opencv-python": STRETCH},
    "radon": {
        "args": [],
        "skimage-python": "import cv2,sys,numpy as n;from skimage.transform import radon;"
        "i=cv2.imread(sys.argv[1],0);n.save(sys.argv[2]+'.npy',radon(i,n.arange(180),circle=False).astype(n.float32))",
    },
    "equalize --reference": {
        "args": ["--reference", "{reference}"],
        "skimage-python": "import cv2,sys,numpy as n;from skimage.exposure import match_histograms as m;"
        "i=cv2.imread(sys.argv[1],0);r=cv2.imread(sys.argv[3],0);"
        "cv2.imwrite(sys.argv[2]+'.pgm',n.clip(n.rint(m(i,r)),0,255).astype(n.uint8))",
    },
}

PIPELINES = {
    "pad|rotate 45|colhist": "pad | rotate 45 | colhist",
    "pad|rotate --line|colhist --line": "pad | rotate --line 0,0,400,400 | colhist --line 0,0,400,400",
    "edges|hough-vote|hough-lines": f"edges {CANNY} | hough-vote | hough-lines --threshold {HOUGH_T}",
}


def out(obj):
    print(json.dumps(obj), flush=True)


def have(tool):
    return shutil.which(tool) is not None


def specs(names):
    """Each tool of `names`, with what it is run with (registry_spec)."""
    for name in names:
        yield name, registry_spec(name)


def write_pgm(path, w, h, data):
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (w, h))
        f.write(data)


def raw(dir_, prefix, content, w, h):
    path = os.path.join(dir_, f"{prefix}{content}-{w}x{h}.u8")
    if not os.path.exists(path) or os.path.getsize(path) != w * h:
        return None
    with open(path, "rb") as f:
        return f.read()


def run_timed(cmd, stdin_path, stdout_path, env, timeout):
    """Wall time of one process (or shell pipeline) in ms, or an error string."""
    t = time.perf_counter()
    with open(stdin_path, "rb") as i, open(stdout_path, "wb") as o:
        try:
            r = subprocess.run(cmd, stdin=i, stdout=o, stderr=subprocess.PIPE, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout} s"
    ms = (time.perf_counter() - t) * 1e3
    if r.returncode != 0:
        return None, f"exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-300:]}"
    return ms, None


def tools(args):
    work = args.work
    os.makedirs(work, exist_ok=True)
    sink = os.path.join(work, "out.tmp")
    for name, spec in specs(registry_tools() if args.only is None else args.only):
        present = have(name)
        for w, h in args.sizes:
            for content in args.content:
                base = {"suite": "tool", "tool": name, "content": content, "width": w, "height": h}
                # The tool's input: the frame, its edge map, or the accumulator hough-vote makes of it.
                frame_pgm = os.path.join(work, f"{content}-{w}x{h}.pgm")
                edges_pgm = os.path.join(work, f"edges-{content}-{w}x{h}.pgm")
                acc_pgm = os.path.join(work, f"acc-{content}-{w}x{h}.pgm")
                for path, prefix in ((frame_pgm, ""), (edges_pgm, "edges-")):
                    if not os.path.exists(path):
                        data = raw(args.dir, prefix, content, w, h)
                        if data is not None:
                            write_pgm(path, w, h, data)
                if spec["input"] == "accumulator" and not os.path.exists(acc_pgm) and have("hough-vote") and os.path.exists(edges_pgm):
                    run_timed(["hough-vote", "--backend", "cpu"], edges_pgm, acc_pgm, os.environ, args.timeout)
                tool_in = {"frame": frame_pgm, "edges": edges_pgm, "accumulator": acc_pgm}[spec["input"]]
                if not present:
                    out({**base, "impl": "histopipe", "status": "missing"})
                elif not os.path.exists(tool_in):
                    out({**base, "impl": "histopipe", "status": f"no input {os.path.basename(tool_in)}"})
                else:
                    for backend in args.backends:
                        cache = tempfile.mkdtemp(prefix="hp-cache-", dir=work)
                        env = {**os.environ, "XDG_CACHE_HOME": cache}
                        cmd = [name, *spec["args"], "--backend", backend]
                        cold, err = run_timed(cmd, tool_in, sink, env, args.timeout)
                        warm = []
                        for _ in range(args.warm_runs if err is None else 0):
                            ms, err = run_timed(cmd, tool_in, sink, env, args.timeout)
                            if err:
                                break
                            warm.append(ms)
                        shutil.rmtree(cache, ignore_errors=True)
                        r = {**base, "impl": f"histopipe-{backend}", "cold_ms": cold}
                        if warm:
                            r.update(warm_ms=statistics.median(warm), warm_min_ms=min(warm), runs=len(warm))
                        if err:
                            r["status"] = err
                        out(r)
                if spec["opencv"]:
                    cv_in = {"frame": frame_pgm, "edges": edges_pgm}[spec.get("opencv_input", spec["input"])]
                    if os.path.exists(cv_in):
                        cmd = [sys.executable, "-c", spec["opencv"], cv_in, sink + ".cv"]
                        times, err = [], None
                        for _ in range(1 + args.warm_runs):
                            t = time.perf_counter()
                            r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=args.timeout)
                            if r.returncode:
                                err = r.stderr.decode(errors="replace").strip()[-300:]
                                break
                            times.append((time.perf_counter() - t) * 1e3)
                        r = {**base, "impl": "opencv-python"}
                        if times:
                            r.update(cold_ms=times[0], warm_ms=statistics.median(times[1:] or times), runs=len(times))
                        if err:
                            r["status"] = err
                        out(r)
    for f in (sink, sink + ".cv", sink + ".cv.pgm"):
        if os.path.exists(f):
            os.remove(f)


def variants(args):
    """Each of VARIANTS on one PGM frame of each size: ours per backend (unless --no-ours), then
    the peers' one-liners of args.peers, each first with an empty cache, then warm (median)."""
    work = args.work
    os.makedirs(work, exist_ok=True)
    sink = os.path.join(work, "out.tmp")
    ref_c, ref_w, ref_h = "random", 640, 651  # frames.REFERENCE, histopipe-bench's reference
    reference = os.path.join(work, f"reference-{ref_c}-{ref_w}x{ref_h}.pgm")
    data = raw(args.dir, "", ref_c, ref_w, ref_h)
    if data is not None:
        write_pgm(reference, ref_w, ref_h, data)
    for name in args.names:
        spec = VARIANTS[name]
        tool = name.split()[0]
        tool_args = [a.format(reference=reference) for a in spec["args"]]
        for w, h in args.sizes:
            for content in args.content:
                base = {"suite": "tool", "tool": name, "content": content, "width": w, "height": h}
                frame_pgm = os.path.join(work, f"{content}-{w}x{h}.pgm")
                if not os.path.exists(frame_pgm):
                    data = raw(args.dir, "", content, w, h)
                    if data is None:
                        out({**base, "impl": "histopipe", "status": f"no input {content}-{w}x{h}.u8"})
                        continue
                    write_pgm(frame_pgm, w, h, data)
                for backend in args.backends if args.ours else []:
                    if not have(tool):
                        out({**base, "impl": "histopipe", "status": "missing"})
                        break
                    cache = tempfile.mkdtemp(prefix="hp-cache-", dir=work)
                    env = {**os.environ, "XDG_CACHE_HOME": cache}
                    cmd = [tool, *tool_args, "--backend", backend]
                    out({**base, "impl": f"histopipe-{backend}", **timed_runs(cmd, frame_pgm, sink, env, args)})
                    shutil.rmtree(cache, ignore_errors=True)
                for peer in args.peers:
                    if peer in spec:
                        cmd = [sys.executable, "-c", spec[peer], frame_pgm, sink + ".cv", reference]
                        out({**base, "impl": peer, **timed_runs(cmd, frame_pgm, sink + ".peer", os.environ, args)})
    for f in (sink, sink + ".cv.pgm", sink + ".peer"):
        if os.path.exists(f):
            os.remove(f)


def timed_runs(cmd, stdin_path, stdout_path, env, args):
    """The first run (cold_ms) and the median of args.warm_runs more (warm_ms), or a status."""
    cold, err = run_timed(cmd, stdin_path, stdout_path, env, args.timeout)
    warm = []
    for _ in range(args.warm_runs if err is None else 0):
        ms, err = run_timed(cmd, stdin_path, stdout_path, env, args.timeout)
        if err:
            break
        warm.append(ms)
    r = {"cold_ms": cold}
    if warm:
        r.update(warm_ms=statistics.median(warm), warm_min_ms=min(warm), runs=len(warm))
    if err:
        r["status"] = err
    return r


def streams(args):
    work = args.work
    os.makedirs(work, exist_ok=True)
    w, h = args.size
    frame = raw(args.dir, "", "real", w, h)
    edges = raw(args.dir, "edges-", "real", w, h)
    if frame is None:
        out({"suite": "stream", "status": f"no input real-{w}x{h}.u8 in {args.dir}"})
        return
    n = args.frames
    files = {"raw": os.path.join(work, "stream.raw"), "pgm": os.path.join(work, "stream.pgm"),
             "edges": os.path.join(work, "stream-edges.raw")}
    header = b"P5\n%d %d\n255\n" % (w, h)

    singles = {k: p + ".one" for k, p in files.items()}

    def ensure(kind):
        """Writes the N-frame stream file of `kind`, and its first frame alone, on first use; False
        when its frame is missing."""
        path = files[kind]
        one = {"raw": frame, "pgm": header + frame, "edges": edges}[kind]
        if one is None:
            return False
        if not os.path.exists(path):
            with open(path, "wb") as f:
                for _ in range(n):
                    f.write(one)
            with open(singles[kind], "wb") as f:
                f.write(one)
        return True

    # The host: a run split over calls of a machine lent per call is held to each machine's own cat.
    base = {"suite": "stream", "width": w, "height": h, "frames": n, "host": platform.node()}

    counted = os.path.join(work, "bytes.txt")

    def measure(name, pipeline, source, backend):
        """The best of --stream-runs runs (pipe throughput on a shared machine only ever drops
        below what the pipeline can do), with every run's fps and the bytes that came out."""
        path = files[source]
        if not ensure(source):
            out({**base, "name": name, "impl": backend, "status": f"no {source} stream"})
            return
        env = {**os.environ}
        if backend not in ("cat",):
            env["HISTOPIPE_BACKEND"] = backend
        # `wc -c` reads its pipe as `cat > /dev/null` would, and counts the output.
        cmd = ["bash", "-o", "pipefail", "-c", f"cat | {pipeline} | wc -c"]
        r = {**base, "name": name, "impl": backend, "source": source}
        runs, firsts = [], []
        for _ in range(args.stream_runs):
            ms, err = run_timed(cmd, path, counted, env, args.timeout)
            if err:
                r["status"] = err
                break
            runs.append(n / (ms / 1e3))
            with open(counted) as f:
                r["out_bytes_per_frame"] = int(f.read().split()[0]) // n
            # The same pipeline on the first frame alone: start-up (processes, GPU driver) plus one
            # frame. What the stream adds to it is the steady rate.
            ms1, err = run_timed(cmd, singles[source], counted, env, args.timeout)
            if err:
                r["status"] = err
                break
            firsts.append(ms1)
        if runs:
            r.update(fps=max(runs), runs_fps=[round(v, 1) for v in runs], seconds=n / max(runs))
        if runs and firsts and n > 1:
            one_s = min(firsts) / 1e3
            r["first_frame_seconds"] = one_s
            if r["seconds"] > one_s:
                r["steady_fps"] = (n - 1) / (r["seconds"] - one_s)
        out(r)

    rawopt = f"--raw {w}x{h}"
    for source in ("raw", "pgm"):
        measure("cat", "cat", source, "cat")
    for name, spec in specs(registry_tools() if args.only is None else args.only):
        if spec["input"] == "accumulator":
            continue  # an accumulator stream: timed in the Hough pipeline
        if not have(name):
            out({**base, "name": name, "status": "missing"})
            continue
        source = "edges" if spec["input"] == "edges" else "raw"
        cmd = " ".join([name, *spec["args"], rawopt])
        for backend in args.backends:
            measure(name, cmd, source, backend)
    for name, pipeline in PIPELINES.items():
        missing = [t for t in {s.split()[0] for s in pipeline.split("|")} if not have(t)]
        if args.only is not None and not any(t in args.only for t in {s.split()[0] for s in pipeline.split("|")}):
            continue
        if missing:
            out({**base, "name": name, "status": "missing " + ",".join(sorted(missing))})
            continue
        for backend in args.backends:
            measure(name, pipeline, "pgm", backend)
    for source in ("raw", "pgm"):
        measure("cat", "cat", source, "cat")
    for path in [*files.values(), *singles.values()]:
        if os.path.exists(path):
            os.remove(path)


def only_tools(text):
    names = []
    for n in text.split(","):
        names += [t for t in registry_tools() if t == n or t.startswith(n + "-") or n.startswith(t + ".")]
    return names


def parse_sizes(text):
    return [tuple(int(v) for v in s.split("x")) for s in filter(None, text.split(","))]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["tools", "streams", "variants"])
    p.add_argument("--dir", default="bench-inputs")
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "histopipe-bench-work"))
    p.add_argument("--sizes", type=parse_sizes, default=parse_sizes("640x651,2560x1707,3932x4000,4096x3112,7680x4320"))
    p.add_argument("--content", type=lambda s: s.split(","), default=["real"])
    p.add_argument("--backends", type=lambda s: s.split(","), default=None)
    p.add_argument("--only", type=only_tools, default=None,
                   help="tools (or ops: hough means hough-vote and hough-lines) to run; others are skipped")
    p.add_argument("--warm-runs", type=int, default=3)
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--size", type=lambda s: tuple(int(v) for v in s.split("x")), default=(3840, 2160))
    p.add_argument("--stream-runs", type=int, default=3)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--names", type=lambda s: s.split(","), default=list(VARIANTS),
                   help="variants: which of VARIANTS (comma-separated)")
    p.add_argument("--peers", type=lambda s: s.split(","), default=["opencv-python"],
                   help="variants: the peers' one-liners to time (opencv-python, skimage-python)")
    p.add_argument("--no-ours", dest="ours", action="store_false", help="variants: the peers only")
    args = p.parse_args()
    if args.backends is None:
        args.backends = ["gpu", "cpu", "auto"] if args.command == "tools" else ["gpu", "auto"]
    {"tools": tools, "streams": streams, "variants": variants}[args.command](args)


if __name__ == "__main__":
    main()
