#!/usr/bin/env python3
"""The "service" stage of the benchmark (issue 50): the GPU service's targets, whole commands as a
user runs them (process start, files and pipes included), `--backend gpu` with the service up
beside `--backend cpu`, in one run, timed as scripts/bench/jobs.py times its jobs.

    scripts/bench/service.py [--files N] [--size WxH] [--reps R] [--radon-reps R] [--parallel P]
                             [--radon-cpu-files N] [--service-backend gpu|cpu] [--bin DIR]
                             [--only equalize,radon,pipe] [--out DIR]

The jobs, each held to issue 50's target:
- equalize: one 4K gray PGM, `equalize --backend gpu -o out.pgm` with the service up against
  `--backend cpu` (target: within 10 ms); beside them, for reference, `--backend gpu` in the
  process (HISTOPIPE_SERVICE=off) and the driver and context alone (jobs.py's cuda_floor.c).
- radon: `xargs -P16 -n1 radon --backend B -o 'out/{stem}.npy'` over N 4K PGMs, radon's default
  angles (0:180:1) on both sides (target: the service at least 5x the CPU's speed). With
  --radon-cpu-files K the CPU side takes the first K files only, and the two are compared per file.
- pipe: `pad < frame | rotate 30 | colhist > h.csv`, every stage `--backend gpu` (the service) against
  every stage `--backend cpu` (target: no slower).

The tools are taken from PATH (--bin DIR first); Python needs NumPy and OpenCV, for the inputs (the
fixtures' photos, cropped and scaled as jobs.py makes its 4K inputs). The service runs in a private
HISTOPIPE_SERVICE_DIR, started before the timed runs and stopped at the end: `histopipe-service
serve --idle 3600` in the background, then `histopipe-service start` once it answers (an idle time
longer than the run, as the CPU's side of the radon job may leave the service unused for minutes;
`start --idle` at 8dc3ed3 gave the default, 300 s). Each job's commands take turns (A B A B ...) after a warm-up each (the radon job's
warm-up on the first P files), which is also the exactness check: the service's outputs must be the
CPU's bytes. The service's own count of frames must grow by exactly the frames its commands handed
it (a tool that did its frames itself, silently, would be timed as something else), and a tool that
says it left the service stops the run. --service-backend cpu (or HISTOPIPE_SERVICE_BACKEND=cpu)
runs the service on the CPU backend, to try the stage where there is no GPU: no in-process GPU and
no driver floor then, and the report says the run measured no GPU.

Writes service.jsonl (a line a command: median, min and max wall seconds), service-meta.json and
service.md (report.py's section of this run) into --out, and prints the section.
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
sys.path.insert(0, HERE)
import jobs  # noqa: E402  (its inputs, its timing and its machine description)
import report  # noqa: E402  (the section, and the verdicts)

TOOLS = ("equalize", "radon", "pad", "rotate", "colhist", "histopipe-service")
# What a tool says on standard error when it leaves the service mid-run (client.rs, give_up).
LEFT = "the GPU service:"
# The service's idle time: longer than the whole run, so that it never ends between two runs.
IDLE_S = 3600


def service(*verb):
    """`histopipe-service VERB...`'s standard output; a failure ends the run."""
    done = subprocess.run(["histopipe-service", *verb], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"histopipe-service {' '.join(verb)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def status():
    """The service's `status` as a dict of its `key value` lines (no `pid` where it is not up)."""
    lines = [line.split(" ", 1) for line in service("status").splitlines()]
    return {k: v for k, v in (line for line in lines if len(line) == 2)}


def start(work):
    """The service, in the background in its own session, and `histopipe-service start` once it
    answers; returns its process and its status."""
    log = open(os.path.join(work, "service-log.txt"), "w")
    proc = subprocess.Popen(["histopipe-service", "serve", "--idle", str(IDLE_S)], stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + 60
    while "pid" not in status():
        if proc.poll() is not None or time.monotonic() > deadline:
            log.close()
            with open(log.name) as f:
                raise SystemExit(f"histopipe-service serve did not start ({proc.poll()}): {f.read()[-2000:]}")
        time.sleep(0.05)
    log.close()
    up = service("start")
    return proc, dict(line.split(" ", 1) for line in up.splitlines() if " " in line)


def stop(proc):
    """Asks the service to stop, and ends its process if it has not within 10 s."""
    try:
        service("stop")
        proc.wait(timeout=10)
    except (SystemExit, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()


def build_floor(work):
    """jobs.py's floor of a GPU process's start (cuda_floor.c), where it builds and runs here."""
    floor = os.path.join(work, "cuda_floor")
    built = subprocess.run(["cc", "-O2", "-o", floor, os.path.join(HERE, "cuda_floor.c"), "-ldl"],
                           capture_output=True)
    if built.returncode != 0 or subprocess.run([floor], capture_output=True).returncode != 0:
        print("service: no driver floor (cuda_floor.c did not build or run)", file=sys.stderr)
        return None
    return floor


def listing(work, name, paths):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write("".join(p + "\n" for p in paths))
    return path


class Command:
    """One command of a job: `line(out, warm)` its shell line writing into `out` (the warm-up's, with
    `warm`, where it differs), the outputs it leaves, and the frames it hands the service (0: none)."""

    def __init__(self, name, line, expect, frames=0, warm_expect=None, warm_frames=None, files=None):
        self.name, self.line, self.expect, self.frames = name, line, expect, frames
        self.warm_expect = expect if warm_expect is None else warm_expect
        self.warm_frames = frames if warm_frames is None else warm_frames
        self.files = files


def job_list(args, work, pgm, floor):
    """The jobs: (key, title, commands); the first command is the service's, the second the CPU's."""
    one = pgm[0]
    cpu_files = pgm[:args.radon_cpu_files] if args.radon_cpu_files else pgm
    warm = pgm[:args.parallel]
    lists = {"gpu": listing(work, "radon-gpu.txt", pgm), "cpu": listing(work, "radon-cpu.txt", cpu_files),
             "warm": listing(work, "radon-warm.txt", warm)}

    def radon(backend, files):
        return lambda out, w: (f"xargs -P{args.parallel} -n1 radon --backend {backend} -o '{out}/{{stem}}.npy' "
                               f"< {lists['warm'] if w else files}")

    def pipe(b):
        return lambda out, w: (f"pad --backend {b} < {one} | rotate --backend {b} 30 | "
                               f"colhist --backend {b} > {out}/h.csv")

    def equalize(b, env=""):
        return lambda out, w: f"{env}equalize --backend {b} -o {out}/e.pgm {one}"

    eq = [Command("gpu, the service up", equalize("gpu"), 1, frames=1),
          Command("cpu", equalize("cpu"), 1)]
    if args.service_backend == "gpu":
        eq.append(Command("gpu in the process (HISTOPIPE_SERVICE=off)", equalize("gpu", "HISTOPIPE_SERVICE=off "), 1))
    if floor:
        eq.append(Command("driver and context alone (cuda_floor.c)", lambda out, w: f"{floor} && touch {out}/floor", 1))
    return [
        ("equalize", f"equalize -o out.pgm, one {args.size} gray PGM", eq),
        ("radon", f"xargs -P{args.parallel} -n1 radon -o 'out/{{stem}}.npy', {len(pgm)} {args.size} gray PGMs", [
            Command("gpu, the service up", radon("gpu", lists["gpu"]), len(pgm), frames=len(pgm),
                    warm_expect=len(warm), warm_frames=len(warm), files=len(pgm)),
            Command("cpu" if len(cpu_files) == len(pgm) else f"cpu, the first {len(cpu_files)} files",
                    radon("cpu", lists["cpu"]), len(cpu_files), warm_expect=len(warm), files=len(cpu_files)),
        ]),
        ("pipe", f"pad < frame | rotate 30 | colhist > h.csv, one {args.size} gray PGM", [
            Command("gpu, the service up (every stage)", pipe("gpu"), 1, frames=3),
            Command("cpu (every stage)", pipe("cpu"), 1),
        ]),
    ]


def same_bytes(a, b):
    """Whether folders `a` and `b` hold the same files with the same bytes."""
    names = sorted(os.listdir(a))
    if names != sorted(os.listdir(b)):
        return False
    for n in names:
        with open(os.path.join(a, n), "rb") as x, open(os.path.join(b, n), "rb") as y:
            if x.read() != y.read():
                return False
    return True


def run_job(key, title, commands, reps, work):
    """The job's rows: the warm-up (and exactness check), then its commands in turn `reps` times."""
    service_cmd, cpu_cmd = commands[0], commands[1]
    before = int(status().get("frames", -1))
    warm = {}
    for i, c in enumerate(commands):
        out = os.path.join(work, "warm", key, str(i))
        jobs.timed(c.line(out, True), out, c.warm_expect, refuse=LEFT)
        warm[c.name] = out
    # Only where the two did the same files (radon's warm-up: the first P files on both sides).
    exact = same_bytes(warm[service_cmd.name], warm[cpu_cmd.name])
    times = {c.name: [] for c in commands}
    out = os.path.join(work, "out")
    for _ in range(reps):
        for c in commands:
            times[c.name].append(jobs.timed(c.line(out, False), out, c.expect, refuse=LEFT))
    served = int(status().get("frames", -1)) - before
    expected = service_cmd.warm_frames + reps * service_cmd.frames
    rows = []
    for c in commands:
        t = times[c.name]
        row = {"job": key, "title": title, "command": c.name, "line": c.line("out", False).replace(work + "/", ""),
               "median_s": round(statistics.median(t), 4), "min_s": round(min(t), 4), "max_s": round(max(t), 4),
               "runs_s": [round(x, 4) for x in t]}
        if c.files is not None:
            row["files"] = c.files
        if c is service_cmd:
            row.update({"service_frames": served, "expected_frames": expected, "same_bytes_as_cpu": exact})
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100, help="the radon job's files (default 100)")
    ap.add_argument("--size", default="3840x2160")
    ap.add_argument("--reps", type=int, default=10, help="timed runs of each command of equalize and pipe")
    ap.add_argument("--radon-reps", type=int, default=3, help="timed runs of each radon command")
    ap.add_argument("--parallel", type=int, default=16, help="xargs -P (default 16)")
    ap.add_argument("--radon-cpu-files", type=int, default=0,
                    help="the CPU's radon over the first N files only (compared per file; default: all)")
    ap.add_argument("--service-backend", choices=("gpu", "cpu"),
                    default=os.environ.get("HISTOPIPE_SERVICE_BACKEND") or "gpu",
                    help="the service's backend (default HISTOPIPE_SERVICE_BACKEND, else gpu); cpu: a "
                         "test of the stage without a GPU")
    ap.add_argument("--bin", help="a folder of the tools and histopipe-service, before PATH")
    ap.add_argument("--only", default="", help="comma-separated jobs: equalize, radon, pipe")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.bin:
        os.environ["PATH"] = os.path.abspath(args.bin) + os.pathsep + os.environ.get("PATH", "")
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        raise SystemExit(f"service: not on PATH: {' '.join(missing)} (give --bin DIR)")
    width, height = map(int, args.size.split("x"))
    if args.service_backend == "cpu":
        os.environ["HISTOPIPE_SERVICE_BACKEND"] = "cpu"
    else:
        os.environ.pop("HISTOPIPE_SERVICE_BACKEND", None)
    for v in ("HISTOPIPE_SERVICE", "HISTOPIPE_SERVICE_FAIL_AT", "HISTOPIPE_SERVICE_BIN"):
        os.environ.pop(v, None)
    only = [o for o in args.only.split(",") if o]
    work = tempfile.mkdtemp(prefix="histopipe-service.")
    proc = None
    try:
        os.environ["HISTOPIPE_SERVICE_DIR"] = os.path.join(work, "service")
        os.mkdir(os.environ["HISTOPIPE_SERVICE_DIR"], 0o700)
        os.chmod(os.environ["HISTOPIPE_SERVICE_DIR"], 0o700)
        began = time.monotonic()
        pgm = jobs.make_inputs(work, args.files, width, height, kinds=("pgm",))["pgm"]
        floor = build_floor(work) if args.service_backend == "gpu" else None
        proc, up = start(work)
        print(f"service: up ({up.get('backend', '?')}, pid {up.get('pid', '?')}), inputs made in "
              f"{time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
        rows = []
        for key, title, commands in job_list(args, work, pgm, floor):
            if only and key not in only:
                continue
            rows += run_job(key, title, commands, args.radon_reps if key == "radon" else args.reps, work)
        end = status()
        meta = jobs.machine(args)
        meta.update({"reps": args.reps, "radon_reps": args.radon_reps, "parallel": args.parallel,
                     "radon_angles": "0:180:1 (radon's default)", "service_backend": args.service_backend,
                     "service": up.get("backend", "?"), "service_restarted": end.get("pid") != up.get("pid"),
                     "seconds": round(time.monotonic() - began)})
    finally:
        if proc is not None:
            stop(proc)
        shutil.rmtree(work, ignore_errors=True)
    section = report.service_section([(rows, meta)])
    text = "\n".join(section) + "\n"
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "service-meta.json"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(args.out, "service.md"), "w") as f:
            f.write(text)
        with open(os.path.join(args.out, "service.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
