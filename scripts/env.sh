# Sourced by scripts/test, scripts/demo and .ci/run: points the environment at .deps/venv, and
# defines what each of them calls to install, once, what it needs beyond the Rust toolchain, saying
# first what it installs and where:
#   - hp_python_requirements FILE...: pinned Python packages (scripts/requirements-*.txt) into one
#     virtual environment, .deps/venv, which it makes first; pip sees what is there and installs
#     only what is missing, and a set already installed is not handed to pip again;
#   - hp_gpu_driver: whether this machine has a GPU driver (libcuda), the only place NVRTC is used;
#   - hp_system_packages: as root, with apt-get, man-db and groff (the install test), zsh and fish
#     (the completions test), GNU parallel and rsync (the many-hosts test);
#   - hp_watched LOG COMMAND...: runs a long step, its output shown and kept in LOG, with a line
#     whenever it has printed nothing for 20 s.
# The tests and the demo find that Python through $HISTOPIPE_PYTHON, and NVRTC on LD_LIBRARY_PATH.
_hp_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_hp_venv="$_hp_root/.deps/venv"
_hp_name="$(basename "$(dirname "$0")")/$(basename "$0")"

hp_say() { echo "$_hp_name: $*" >&2; }

# The virtual environment, made once with python3's venv module; where that module cannot make one
# with pip in it (Debian's python3 without python3-venv), with virtualenv, which pip puts into
# .deps/virtualenv.
_hp_make_venv() {
  "$_hp_venv/bin/python" -c '' 2>/dev/null && return 0
  hp_say "making a Python virtual environment in .deps/venv (python3 -m venv, a few seconds)"
  rm -rf "$_hp_venv"
  python3 -m venv "$_hp_venv" && return 0
  hp_say "python3 -m venv could not (python3-venv missing?): installing virtualenv into" \
    ".deps/virtualenv with pip, to make it with"
  rm -rf "$_hp_venv"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --target "$_hp_root/.deps/virtualenv" virtualenv &&
    PYTHONPATH="$_hp_root/.deps/virtualenv" python3 -m virtualenv --quiet "$_hp_venv"
}

# A requirements file's packages, and those of the files it includes with -r, one a line.
_hp_requirements() {
  local line
  while read -r line; do
    case $line in
      '' | '#'*) ;;
      '-r '*) _hp_requirements "$(dirname "$1")/${line#-r }" ;;
      *) echo "$line" ;;
    esac
  done <"$1"
}

# Installs each FILE's packages into .deps/venv, unless every one of them is there already: all
# are pinned, and .deps/venv/.installed is pip's list of what is, as of the last install.
hp_python_requirements() {
  _hp_make_venv || return 1
  local file missing log
  touch "$_hp_venv/.installed"
  for file in "$@"; do
    missing=$(_hp_requirements "$file" | grep -vixF -f "$_hp_venv/.installed" || true)
    [ -n "$missing" ] || continue
    hp_say "installing into .deps/venv with pip: $(echo "$missing" | paste -sd " ")"
    log=$(mktemp)
    hp_watched "$log" "$_hp_venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off \
      -r "$file" >&2 || { rm -f "$log"; return 1; }
    rm -f "$log"
    "$_hp_venv/bin/python" -m pip freeze --disable-pip-version-check >"$_hp_venv/.installed"
  done
  _hp_point_at_venv
}

# The tests' Python is the one the packages were just installed for: a HISTOPIPE_PYTHON inherited
# from elsewhere (another checkout's .deps/venv, sourced in the same shell) may lack them, and every
# peer test would fail for it.
_hp_point_at_venv() {
  if [ -n "${HISTOPIPE_PYTHON:-}" ] && [ "$HISTOPIPE_PYTHON" != "$_hp_venv/bin/python" ]; then
    hp_say "HISTOPIPE_PYTHON was $HISTOPIPE_PYTHON: using $_hp_venv/bin/python, where the packages are"
  fi
  export HISTOPIPE_PYTHON="$_hp_venv/bin/python"
  local lib
  for lib in "$_hp_venv"/lib/python3*/site-packages/nvidia/cu13/lib; do
    if [ -d "$lib" ] && [[ ":${LD_LIBRARY_PATH:-}:" != *":$lib:"* ]]; then
      export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
  done
}

# The cargo flags a build of the tools takes here: libjpeg-turbo's SIMD where nasm is (the same
# bytes as its portable C, JPEG decoding and encoding about 1.4x faster; crates/frame/Cargo.toml).
# A libjpeg-turbo that cargo built before nasm was installed stays the portable C (mozjpeg-sys
# only warns, and its build is kept), so such a build is cleaned first.
hp_cargo_features() {
  command -v nasm >/dev/null || return 0
  local out
  for out in "${CARGO_TARGET_DIR:-$_hp_root/target}"/*/build/mozjpeg-sys-*/output; do
    if [ -f "$out" ] && grep -q "NASM not installed" "$out"; then
      hp_say "libjpeg-turbo was built here before nasm was installed: rebuilding it with its SIMD"
      (cd "$_hp_root" && cargo clean -q -p mozjpeg-sys --release && cargo clean -q -p mozjpeg-sys) 2>/dev/null
      break
    fi
  done
  echo "--features histopipe/simd"
}

hp_gpu_driver() {
  ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' || [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] ||
    [ -e /usr/local/nvidia/lib64/libcuda.so.1 ]
}

# What the install test and the many-hosts test run, installed system-wide with apt-get where this
# is root on Debian; elsewhere those tests say what is missing.
hp_system_packages() {
  local wanted=()
  if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
    wanted+=(man-db groff-base)
    hp_say "man-db and groff-base are needed: the install test reads the installed manual pages" \
      "with man -l (tests/tools/install.rs)"
  fi
  if ! command -v zsh >/dev/null || ! command -v fish >/dev/null; then
    wanted+=(zsh fish)
    hp_say "zsh and fish are wanted: the completions test runs their completions of every option's" \
      "values (tests/tools/install.rs; skipped without them, saying so)"
  fi
  if ! command -v nasm >/dev/null; then
    wanted+=(nasm)
    hp_say "nasm is wanted: it builds libjpeg-turbo's SIMD, for JPEG 1.4x faster (without it, the" \
      "portable C: the same bytes)"
  fi
  if ! parallel --version 2>/dev/null | grep -q '^GNU parallel' || ! command -v rsync >/dev/null; then
    wanted+=(parallel rsync)
    hp_say "GNU parallel and rsync are needed: the many-hosts test runs docs/scaling.md's commands" \
      "(tests/tools/scaling.rs)"
  fi
  [ ${#wanted[@]} -gt 0 ] || return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    hp_say "not root with apt-get: not installing ${wanted[*]}; the tests that need them will say so"
    return 0
  fi
  hp_say "installing ${wanted[*]} system-wide with apt-get (under a minute)"
  local log
  log=$(mktemp)
  hp_watched "$log" bash -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"' apt-get \
    "${wanted[@]}" >&2 || hp_say "could not install ${wanted[*]}; the tests that need them will say so"
  rm -f "$log"
}

# Runs COMMAND, its output (and standard error) shown and appended to LOG; returns its status.
# Whenever it has printed nothing for 20 to 25 s, a line says how long it has run and what it
# printed last.
hp_watched() {
  local log=$1
  shift
  (
    local start=$SECONDS last=-1 size quiet=0
    while sleep 5 && kill -0 $$ 2>/dev/null; do
      size=$(stat -c %s "$log" 2>/dev/null || echo 0)
      if [ "$size" != "$last" ]; then last=$size quiet=0; else quiet=$((quiet + 5)); fi
      if [ "$quiet" -ge 20 ]; then
        hp_say "still at it, $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s in;" \
          "last: $(tail -n 1 "$log" | cut -c 1-100)"
        quiet=0
      fi
    done
  ) &
  local beat=$! status -
  set +e
  "$@" 2>&1 | tee -a "$log"
  status=${PIPESTATUS[0]}
  kill "$beat" 2>/dev/null
  wait "$beat" 2>/dev/null
  return "$status"
}

_hp_point_at_venv
if [ -d "$_hp_root/.deps/python" ] || [ -d "$_hp_root/.deps/snakemake" ]; then
  hp_say ".deps/python and .deps/snakemake are no longer used (.deps/venv holds it all):" \
    "rm -rf them to free their space"
fi
