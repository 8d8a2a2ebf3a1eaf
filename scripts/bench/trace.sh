# Sourced by scripts/bench/batch and scripts/bench/gpus, after WORK is set: with TRACE=1,
# `traced DIR CMD HEADING` runs the command line CMD (bash) once more, in a fresh output folder
# DIR, with HISTOPIPE_TRACE set, and appends scripts/trace-summary's account of it, under HEADING,
# to $TRACES, which the report prints after its table.
TRACE=${TRACE:-0}
TRACES="$WORK/traces.txt"
: >"$TRACES"
traced() {
  [ "$TRACE" = 1 ] || return 0
  rm -rf "$1" "$WORK/trace.csv"
  mkdir -p "$1"
  HISTOPIPE_TRACE="$WORK/trace.csv" bash -o pipefail -c "$2" >&2 || { echo "$0: failed: $2" >&2; exit 1; }
  { echo; echo "Trace: $3"; echo; echo '```'; scripts/trace-summary "$WORK/trace.csv"; echo '```'; } >>"$TRACES"
}
