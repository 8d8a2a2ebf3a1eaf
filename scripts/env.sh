# Sourced by scripts/test and scripts/demo: installs what histopipe's tests and demos need beyond
# the Rust toolchain into .deps/ (once), and points the environment at it.
#   - libnvrtc from pip's nvidia-cuda-nvrtc (no GPU needed), for compiling the kernels;
#   - OpenCV (opencv-python-headless) and NumPy, the peers the tests compare against; pandas, which
#     the tests load every table with, as a user would;
#   - as root, with apt-get: man-db and groff (the install test), GNU parallel and rsync (the
#     many-hosts test).
_hp_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_hp_py="$_hp_root/.deps/python"
_hp_stamp="$_hp_py/.installed-v2"
if [ ! -f "$_hp_stamp" ]; then
  echo "scripts/env.sh: installing NVRTC, NumPy, OpenCV and pandas into .deps/python" >&2
  python3 -m pip install --quiet --disable-pip-version-check --target "$_hp_py" --upgrade \
    nvidia-cuda-nvrtc==13.0.88 numpy opencv-python-headless pandas >&2 && touch "$_hp_stamp"
fi
# The install test reads the installed manual pages with man -l (tests/tools/install.rs): man-db
# and groff from the system's packages, where this machine lets us install them.
if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "scripts/env.sh: installing man-db and groff-base (apt-get)" >&2
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends man-db groff-base; } >/dev/null 2>&1 ||
      echo "scripts/env.sh: could not install man-db; the install test will say so" >&2
  fi
fi
# The many-hosts test runs docs/scaling.md's GNU parallel commands (tests/tools/scaling.rs): GNU
# parallel, and rsync, which it sends files with, from the system's packages where we may.
if ! parallel --version 2>/dev/null | grep -q '^GNU parallel' || ! command -v rsync >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "scripts/env.sh: installing GNU parallel and rsync (apt-get)" >&2
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends parallel rsync; } >/dev/null 2>&1 ||
      echo "scripts/env.sh: could not install GNU parallel; the scaling test will say so" >&2
  fi
fi
export LD_LIBRARY_PATH="$_hp_py/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$_hp_py${PYTHONPATH:+:$PYTHONPATH}"
export HISTOPIPE_PYTHON="${HISTOPIPE_PYTHON:-python3}"
unset _hp_root _hp_py _hp_stamp
