#!/usr/bin/env python3
"""scikit-image, the peer of `equalize --reference` and `threshold --method multiotsu:3`, on the
inputs histopipe-bench writes; a script of its own because scikit-image (and scipy) reach the GPU
machine as wheels in a call of their own (scripts/bench/skimage-wheels, scripts/bench/run
--stage thresholds --skimage).

    skimage_peers.py gen --dir D --sizes WxH,... [--content real,random] [--fixture F]
        writes D/<content>-<W>x<H>.u8 and the reference, byte for byte as `histopipe-bench gen`
        (frames.py), on a machine without histopipe-bench.
    skimage_peers.py kernels --dir D --sizes ... [--quick]
        times the calls in process as cpu_peers.py times OpenCV's (time_cpu: warm-up, median of
        runs fitted to a time budget) and prints one JSON line per case, impl `skimage`:
        equalize.reference  match_histograms(img, ref), ref the benchmark's reference
                            (frames.REFERENCE, histopipe-bench's too); its output is float64, as
                            scikit-image returns it (ours is its np.rint, clipped, in 8 bits)
        threshold.multiotsu np.digitize(img, threshold_multiotsu(img, classes=3)): the thresholds
                            and the labels, ours's work
        radon               radon(img, np.arange(180), circle=False): the sinogram of 180 angles
                            (float64, as scikit-image returns it; ours is float32), padded to the
                            diagonal as `radon` by default, the work of histopipe-bench's radon
        iradon              iradon(sinogram, np.arange(180), circle=False) of that sinogram as
                            float32 (as `radon` writes it; made before the timing): the ramp
                            filter, floor(N / sqrt 2) square, the work of histopipe-bench's iradon
        NumPy and scikit-image run these on one thread.
"""
import argparse
import json
import os
import sys

import numpy as np

import frames
from cpu_peers import inputs, load, parse_sizes, time_cpu

OPS = ["equalize.reference", "threshold.multiotsu", "radon", "iradon"]


def cases(img, ref, ops):
    from skimage.exposure import match_histograms
    from skimage.filters import threshold_multiotsu
    from skimage.transform import iradon, radon

    if "equalize.reference" in ops:
        yield "equalize.reference", lambda: match_histograms(img, ref)
    if "threshold.multiotsu" in ops:
        yield "threshold.multiotsu", lambda: np.digitize(img, threshold_multiotsu(img, classes=3))
    if "radon" in ops:
        yield "radon", lambda: radon(img, np.arange(180), circle=False)
    if "iradon" in ops:
        sinogram = radon(img, np.arange(180), circle=False).astype(np.float32)
        yield "iradon", lambda: iradon(sinogram, np.arange(180), circle=False)


def kernels(args):
    import scipy
    import skimage

    print(json.dumps({"suite": "device", "impl": "skimage", "skimage": skimage.__version__,
                      "scipy": scipy.__version__, "numpy": np.__version__, "threads": 1}), flush=True)
    c, w, h = frames.REFERENCE
    ref = load(args.dir, "", c, w, h)
    if ref is None:
        sys.exit(f"skimage_peers: the reference {c}-{w}x{h}.u8 is not in {args.dir} (run gen)")
    for content, w, h, img in inputs(args, "skimage_peers"):
        base = {"suite": "kernel", "impl": "skimage", "content": content, "width": w, "height": h, "threads": 1}
        for op, fn in cases(img, ref, args.ops):
            print(json.dumps({**base, "op": op, **time_cpu(fn, args.quick)}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["gen", "kernels"])
    p.add_argument("--dir", default="bench-inputs")
    p.add_argument("--sizes", type=parse_sizes, default=parse_sizes("640x651,2560x1707,3932x4000,4096x3112,7680x4320,16384x16384"))
    p.add_argument("--content", type=lambda s: s.split(","), default=["real", "random"])
    p.add_argument("--ops", type=lambda s: s.split(","), default=OPS)
    p.add_argument("--fixture", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "camera.pgm"))
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    if args.command == "gen":
        frames.gen(args.dir, args.sizes, args.content, args.fixture)
    else:
        kernels(args)


if __name__ == "__main__":
    main()
