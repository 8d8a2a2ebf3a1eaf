# Sourced by scripts/test and scripts/demo: points the environment at .deps/, and defines what
# each of them calls to install, once, what it needs beyond the Rust toolchain:
#   - hp_python_packages NAME PACKAGE...: Python packages into .deps/python (libnvrtc from pip's
#     nvidia-cuda-nvrtc, no GPU needed, for compiling the kernels; OpenCV and NumPy, the peers the
#     tests compare against and the demo puts pictures side by side with; pandas, which the tests
#     load every table with, as a user would);
#   - hp_snakemake: Snakemake and its Slurm executor plugin, pinned, into .deps/snakemake, for the
#     test of the Snakemake workflow (tests/tools/snakemake.rs), which finds them there;
#   - hp_gpu_driver: whether this machine has a GPU driver (libcuda), the only place NVRTC is used;
#   - hp_system_packages: as root, with apt-get, man-db and groff (the install test), GNU parallel
#     and rsync (the many-hosts test).
_hp_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_hp_py="$_hp_root/.deps/python"

# Installs PACKAGEs into .deps/python unless the set NAME is there already. pip is told not to
# judge the system's own packages (`--no-warn-conflicts`): .deps/python is ours alone, and its
# resolver's complaints about unrelated system packages read like a failure.
hp_python_packages() {
  local name=$1
  shift
  [ -f "$_hp_py/.installed-$name" ] && return 0
  echo "scripts/env.sh: installing $* into .deps/python" >&2
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --root-user-action=ignore --target "$_hp_py" \
    --upgrade "$@" >&2 && touch "$_hp_py/.installed-$name"
}

# A folder of their own, on no one's PYTHONPATH but the test's: pip's --target puts all 59 of
# their packages there, which in .deps/python would replace the tests' NumPy and pandas, and
# packaging with an older one.
hp_snakemake() {
  local pins="snakemake==9.27.1 snakemake-executor-plugin-slurm==2.8.0"
  local to="$_hp_root/.deps/snakemake"
  [ "$(cat "$to/.installed" 2>/dev/null)" = "$pins" ] && return 0
  echo "scripts/env.sh: installing $pins into .deps/snakemake" >&2
  # shellcheck disable=SC2086
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --root-user-action=ignore --target "$to" \
    --upgrade $pins >&2 && echo "$pins" >"$to/.installed"
}

hp_gpu_driver() {
  ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' || [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] ||
    [ -e /usr/local/nvidia/lib64/libcuda.so.1 ]
}

hp_system_packages() {
  # The install test reads the installed manual pages with man -l (tests/tools/install.rs).
  if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "scripts/env.sh: installing man-db and groff-base (apt-get)" >&2
      { apt-get update -qq && apt-get install -y -qq --no-install-recommends man-db groff-base; } >/dev/null 2>&1 ||
        echo "scripts/env.sh: could not install man-db; the install test will say so" >&2
    fi
  fi
  # The many-hosts test runs docs/scaling.md's GNU parallel commands (tests/tools/scaling.rs),
  # which send files with rsync.
  if ! parallel --version 2>/dev/null | grep -q '^GNU parallel' || ! command -v rsync >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "scripts/env.sh: installing GNU parallel and rsync (apt-get)" >&2
      { apt-get update -qq && apt-get install -y -qq --no-install-recommends parallel rsync; } >/dev/null 2>&1 ||
        echo "scripts/env.sh: could not install GNU parallel; the scaling test will say so" >&2
    fi
  fi
}

export LD_LIBRARY_PATH="$_hp_py/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$_hp_py${PYTHONPATH:+:$PYTHONPATH}"
export HISTOPIPE_PYTHON="${HISTOPIPE_PYTHON:-python3}"
