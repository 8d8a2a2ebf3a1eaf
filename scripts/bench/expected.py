#!/usr/bin/env python3
"""The peers of issue 49's operations (the thresholds, borders, colour spaces and float inputs people
expect), timed on the inputs histopipe-bench writes, beside histopipe-bench's entries of the same
names (scripts/bench/run --stage expected runs both, then report.py's section compares them).

    expected.py peers --dir D --sizes WxH,... [--content real,random] [--ops ...] [--quick]
        times each peer call in process (cpu_peers.time_cpu: warm-up, median of runs fitted to a
        time budget) and prints one JSON line per case, impl `opencv-all` (OpenCV on every thread,
        as it runs by default) or `skimage` (scikit-image and NumPy, one thread: their code has
        none). Each call is the work of the histopipe-bench entry of the same name:
        threshold.mean      cv2.adaptiveThreshold(img, 255, ADAPTIVE_THRESH_MEAN_C, THRESH_BINARY,
                            11, 2)  (threshold --method mean:11,2)
        threshold.gaussian  the same, ADAPTIVE_THRESH_GAUSSIAN_C  (--method gaussian:11,2)
        threshold.sauvola   img > threshold_sauvola(img)  (window 15, k 0.2: --method sauvola)
        pad.reflect101      cv2.copyMakeBorder to the diagonal, BORDER_REFLECT_101
                            (pad --mode reflect101)
        rotate.flip         cv2.flip(img, 1)  (rotate 0 --flip h)
        stretch.to_float    rescale_intensity(f, in_range="image", out_range=(0, 1)) of the frame
                            as float32 samples 0..255  (stretch --out 0:1)
        equalize.float      equalize_hist(f) of the frame as float32 samples 0..255  (equalize on
                            floats)
        threshold.float     f > threshold_otsu(f), the same float32 frame  (threshold on floats)
    The same outputs as ours where a test checks them (tests/tools/*.rs); here only the time.
"""
import argparse
import json
import os
import sys

import cv2
import numpy as np

from cpu_peers import ceil_sqrt, inputs, parse_sizes, time_cpu

OPS = ["threshold.mean", "threshold.gaussian", "threshold.sauvola", "pad.reflect101", "rotate.flip",
       "stretch.to_float", "equalize.float", "threshold.float"]


def cases(img, ops):
    """(op, impl, function) of each peer call on the 8-bit gray frame `img`."""
    h, w = img.shape
    if "threshold.mean" in ops:
        yield "threshold.mean", "opencv-all", lambda: cv2.adaptiveThreshold(
            img, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY, 11, 2)
    if "threshold.gaussian" in ops:
        yield "threshold.gaussian", "opencv-all", lambda: cv2.adaptiveThreshold(
            img, 255, cv2.ADAPTIVE_THRESH_GAUSSIAN_C, cv2.THRESH_BINARY, 11, 2)
    if "pad.reflect101" in ops:
        d = ceil_sqrt(w * w + h * h)
        left, top = (d - w) // 2, (d - h) // 2
        yield "pad.reflect101", "opencv-all", lambda: cv2.copyMakeBorder(
            img, top, d - h - top, left, d - w - left, cv2.BORDER_REFLECT_101)
    if "rotate.flip" in ops:
        yield "rotate.flip", "opencv-all", lambda: cv2.flip(img, 1)
    skimage_ops = {"threshold.sauvola", "stretch.to_float", "equalize.float", "threshold.float"}
    if not skimage_ops & set(ops):
        return
    from skimage.exposure import equalize_hist, rescale_intensity
    from skimage.filters import threshold_otsu, threshold_sauvola

    f = img.astype(np.float32)
    if "threshold.sauvola" in ops:
        yield "threshold.sauvola", "skimage", lambda: img > threshold_sauvola(img)
    if "stretch.to_float" in ops:
        yield "stretch.to_float", "skimage", lambda: rescale_intensity(f, in_range="image", out_range=(0, 1))
    if "equalize.float" in ops:
        yield "equalize.float", "skimage", lambda: equalize_hist(f)
    if "threshold.float" in ops:
        yield "threshold.float", "skimage", lambda: f > threshold_otsu(f)


def peers(args):
    import skimage

    print(json.dumps({"suite": "device", "impl": "peers", "opencv": cv2.__version__,
                      "skimage": skimage.__version__, "numpy": np.__version__,
                      "opencv_threads": cv2.getNumThreads()}), flush=True)
    for content, w, h, img in inputs(args, "expected"):
        for op, impl, fn in cases(img, args.ops):
            threads = cv2.getNumThreads() if impl == "opencv-all" else 1
            print(json.dumps({"suite": "kernel", "op": op, "impl": impl, "content": content, "width": w,
                              "height": h, "threads": threads, **time_cpu(fn, args.quick)}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["peers"])
    p.add_argument("--dir", default="bench-inputs")
    p.add_argument("--sizes", type=parse_sizes, default=parse_sizes("640x651,2560x1707,3932x4000"))
    p.add_argument("--content", type=lambda s: s.split(","), default=["real"])
    p.add_argument("--ops", type=lambda s: s.split(","), default=OPS)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    sys.exit(peers(args))


if __name__ == "__main__":
    main()
