"""The benchmark's inputs made in Python, byte for byte as `histopipe-bench gen` writes them
(crates/bench/src/inputs.rs), for a machine that has no histopipe-bench (scripts/bench/run
--stage thresholds --skimage runs with Python and wheels only); and the mask and reference of the `equalize` entries
(crates/bench/src/registry.rs: disc_mask, reference_counts). NumPy only.

- real: the fixture scaled by nearest neighbour, source pixel (x * fw // w, y * fh // h);
- random: fastrand 2's `Rng::with_seed(0x6869_7374_6f70_6970 ^ (w * 65537 + h)).fill(..)`: wyrand,
  one u64 a state (s += 0x2d358dccaa6c78a5; t = s * (s ^ 0x8bb84b93962eacc9) in 128 bits;
  t_lo ^ t_hi), its 8 little-endian bytes in order, the last one's first bytes for a remainder.
"""
import os

import numpy as np

SEED_BASE = 0x6869_7374_6F70_6970
WY0, WY1 = 0x2D358DCCAA6C78A5, 0x8BB84B93962EACC9
M32 = np.uint64(0xFFFFFFFF)
# `equalize --reference`'s reference in the benchmark (registry.rs: REFERENCE_SIZE).
REFERENCE = ("random", 640, 651)


def read_pgm(path):
    """An 8-bit binary PGM (P5) as a (h, w) uint8 array; comments allowed in the header."""
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P5" or int(fields[3]) > 255:
        raise ValueError(f"{path}: not an 8-bit binary PGM")
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data, np.uint8, w * h, pos + 1).reshape(h, w)


def mul64(a, b):
    """(low, high) 64-bit halves of a * b, elementwise on uint64 arrays."""
    a0, a1, b0, b1 = a & M32, a >> np.uint64(32), b & M32, b >> np.uint64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> np.uint64(32)) + (p01 & M32) + (p10 & M32)
    lo = (p00 & M32) | (mid << np.uint64(32))
    hi = p11 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (mid >> np.uint64(32))
    return lo, hi


def random_bytes(w, h):
    n = w * h
    seed = (SEED_BASE ^ (w * 65537 + h)) & 0xFFFFFFFFFFFFFFFF
    words = (n + 7) // 8
    out = np.empty(words * 8, np.uint8)
    step = 1 << 22
    with np.errstate(over="ignore"):
        for first in range(0, words, step):
            i = np.arange(first + 1, min(first + step, words) + 1, dtype=np.uint64)
            s = np.uint64(seed) + i * np.uint64(WY0)
            lo, hi = mul64(s, s ^ np.uint64(WY1))
            out[8 * first:8 * (first + len(i))] = (lo ^ hi).astype("<u8").view(np.uint8)
    return out[:n]


def generate(content, fixture, w, h):
    if content == "real":
        fh, fw = fixture.shape
        rows = np.arange(h) * fh // h
        cols = np.arange(w) * fw // w
        return fixture[rows[:, None], cols[None, :]].ravel()
    if content == "random":
        return random_bytes(w, h)
    raise ValueError(f"unknown content '{content}' (real or random)")


def gen(dir_, sizes, contents, fixture_path):
    """Writes DIR/<content>-<W>x<H>.u8 for each size and content (and the reference), as
    `histopipe-bench gen` does; a file of the right size already there is kept."""
    os.makedirs(dir_, exist_ok=True)
    fixture = read_pgm(fixture_path)
    todo = [(c, w, h) for w, h in sizes for c in contents] + [REFERENCE]
    for c, w, h in todo:
        path = os.path.join(dir_, f"{c}-{w}x{h}.u8")
        if os.path.exists(path) and os.path.getsize(path) == w * h:
            continue
        generate(c, fixture, w, h).tofile(path)


def disc_mask(w, h):
    """registry.rs's disc_mask: 1 inside the disc inscribed in the frame, centred."""
    d = min(w, h)
    y = (2 * np.arange(h, dtype=np.int64) + 1 - h) ** 2
    x = (2 * np.arange(w, dtype=np.int64) + 1 - w) ** 2
    return (x[None, :] + y[:, None] <= d * d).astype(np.uint8)
