"""Makes the fixtures of crates/frame/src/float's tests (see README.md beside this file).

Needs numpy, cv2 (opencv-python-headless) and astropy; run from this folder:
    PYTHONPATH=/path/to/astropy .deps/venv/bin/python make_fixtures.py
"""
import numpy as np
import cv2
from astropy.io import fits

# .npy files numpy.save writes, which encode_npy / encode_npy_array must match byte for byte.
gray = (np.arange(12) * 0.25 - 1.0).astype(np.float32)
gray[5], gray[6], gray[7] = np.nan, np.inf, -0.0
np.save("numpy_f4_3x4.npy", gray.reshape(3, 4))
np.save("numpy_u1_2x3x3.npy", (np.arange(18) * 13).astype(np.uint8).reshape(2, 3, 3))
np.save("numpy_u2_1x1x4.npy", (65535 - np.arange(4) * 1000).astype(np.uint16).reshape(1, 1, 4))
np.save("numpy_u8_table_2x3.npy",
        np.array([0, 1, 1_000_000_007, 1 << 40, 2**64 - 2, 2**64 - 1], dtype=np.uint64).reshape(2, 3))
np.save("numpy_f8_2x3x4.npy", (np.arange(24) / 3.0).reshape(2, 3, 4))
np.save("numpy_f8_5.npy", np.full(5, 0.5))

# .npy files the reader must read: big-endian, bool, format 2.0.
np.save("numpy_f8_be_2x2.npy", np.array([[1 / 3, 1e300], [-2.5, np.nan]], dtype=">f8"))
np.save("numpy_b1_2x3.npy", np.array([[True, False, True], [False, False, True]]))
np.save("numpy_u2_be_1x3x1.npy", np.array([1, 256, 65535], dtype=">u2").reshape(1, 3, 1))
with open("numpy_f4_be_v2_3x1.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([[0.5], [-1.5], [3.0e38]], dtype=">f4"), version=(2, 0))

# A PFM OpenCV writes: 3 rows of 4 RGB pixels, (r, x, c) = r - x / 8 + c / 2 in RGB order, NaN at
# (1, 2, R), -inf at (2, 3, B). OpenCV holds BGR and writes RGB.
r, x, c = np.meshgrid(np.arange(3), np.arange(4), np.arange(3), indexing="ij")
rgb = (r - x / 8 + c / 2).astype(np.float32)
rgb[1, 2, 0], rgb[2, 3, 2] = np.nan, -np.inf
assert cv2.imwrite("opencv_rgb.pfm", rgb[:, :, ::-1].copy())


# FITS files astropy writes, each with the .npy of what fits.getdata gives for it: interleaved
# (channels last), float32 unless it is 8-bit or 16-bit unsigned.
def fits_case(name, data, **cards):
    hdu = fits.PrimaryHDU(data)
    for key, value in cards.items():
        hdu.header[key] = value
    hdu.writeto(f"fits_{name}.fits", overwrite=True)
    got = fits.getdata(f"fits_{name}.fits")
    if got.ndim == 3:
        got = np.moveaxis(got, 0, -1)
    if got.dtype not in (np.uint8, np.uint16):
        got = got.astype(np.float32)
    np.save(f"fits_{name}.npy", np.ascontiguousarray(got))


ramp = np.arange(15).reshape(3, 5)
fits_case("u8", (ramp * 17).astype(np.uint8))
fits_case("u16", (ramp * 4000 + 5).astype(np.uint16))
fits_case("i16_scaled", (ramp * 1000 - 7000).astype(np.int16), BSCALE=0.1, BZERO=1 / 3)
fits_case("i32_scaled_blank", (ramp * 100_000_007 - 700_000_000).astype(np.int32),
          BSCALE=1e-3, BZERO=0.7, BLANK=-700_000_000)
f32 = (ramp / 7).astype(np.float32)
f32[1, 2], f32[2, 4], f32[0, 0] = np.nan, -np.inf, -0.0
fits_case("f32_nan", f32)
fits_case("f32_scaled", (ramp / 7).astype(np.float32), BSCALE=0.3, BZERO=-1 / 3)
fits_case("f64", ramp / 7 + 1e-12)
fits_case("rgb_cube", (np.arange(2 * 3 * 4) * 9).astype(np.uint8).reshape(3, 2, 4))
