#!/usr/bin/env bash
# deskew against ImageMagick's -deskew on the same turned pages: each page padded with white
# (80 pixels), turned by known angles with our rotate --bilinear (white corners), then measured
# by both; prints one CSV row a page and turn:
#   page,turn,ours,ours_err,ours_s,imagemagick,imagemagick_err,imagemagick_s
# ours_err = |ours - (ours on the unturned page + turn)|; imagemagick_err likewise. Its
# deskew:angle is the turn it straightens the page by in its -rotate's sign (clockwise), so the
# page's skew counter-clockwise: our sign (a page turned by our rotate 2.3 reads about 2.3 there
# too; measured, see docs/deskew.md). Each tool is measured against
# its own reading of the unturned page, since a photographed page's own skew is not known
# exactly. Times: the best of $REPEAT runs of the whole command (process start and file read
# included): `deskew --backend $BACKEND --format csv` against `convert in.pgm -deskew 40%
# -format '%[deskew:angle]' info:`.
#
# Environment:
#   IM_ROOT  where ImageMagick 6's Debian packages are unpacked (dpkg -x each .deb into it): its
#            convert-im6.q16, libraries, configuration and coder modules are used from there.
#            Unset: `convert` from the PATH.
#   BIN      where our tools are (default: target/release).
#   PAGES    pages to measure (default: the fixtures text.pgm and page.pgm, and two pages drawn
#            here: lines of text-like blocks, 1200x900 and an A4 page at 300 dpi, 2480x3508).
#   TURNS    angles in degrees (default: 0 0.7 -0.7 2.3 -4.1 9.5 14 -14 0.33).
#   REPEAT   runs timed a command (default 3).   BACKEND  ours (default cpu).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${BIN:-$root/target/release}
repeat=${REPEAT:-3}
if [ -n "${IM_ROOT:-}" ]; then
  convert=$IM_ROOT/usr/bin/convert-im6.q16
  LD_LIBRARY_PATH=$(find "$IM_ROOT" -name '*.so*' -printf '%h\n' | sort -u | tr '\n' ':')${LD_LIBRARY_PATH:-}
  modules=$(ls -d "$IM_ROOT"/usr/lib/x86_64-linux-gnu/ImageMagick-6*/modules-Q16)
  export LD_LIBRARY_PATH MAGICK_CONFIGURE_PATH=$IM_ROOT/etc/ImageMagick-6
  export MAGICK_CODER_MODULE_PATH=$modules/coders MAGICK_CODER_FILTER_PATH=$modules/filters
else
  convert=convert
fi
command -v "$convert" >/dev/null || { echo "deskew_peer: no ImageMagick convert (set IM_ROOT)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A straight page of text-like lines: rows of dark blocks 12 pixels high every 40 (scaled by
# the page's width / 1200), on white, as the tests draw them; written as a PGM.
draw() {
  python3 - "$@" <<'EOF'
import random, sys
w, h, seed, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
k = w / 1200
rng = random.Random(seed)
rows = []
for line in range(int(h / (40 * k))):
    row = bytearray([240]) * w
    x = int(0.1 * w + rng.random() * 20 * k)
    while x < 0.9 * w:
        n = int((6 + rng.random() * 30) * k)
        row[x:x + n] = bytes([15]) * len(row[x:x + n])
        x += n + int((4 + rng.random() * 10) * k)
    rows.append(bytes(row))
blank = bytes([240]) * w
with open(out, "wb") as f:
    f.write(b"P5\n%d %d\n255\n" % (w, h))
    for y in range(h):
        v = y / k
        line = int(v // 40)
        inked = 20 <= v < h / k - 20 and v % 40 < 12 and line < len(rows)
        f.write(rows[line] if inked else blank)
EOF
}

if [ -z "${PAGES:-}" ]; then
  draw 1200 900 1 "$work/drawn.pgm"
  draw 2480 3508 2 "$work/a4.pgm"
  PAGES="$root/tests/fixtures/text.pgm $root/tests/fixtures/page.pgm $work/drawn.pgm $work/a4.pgm"
fi

# best_of CMD...: runs CMD $repeat times; prints the best wall time in seconds, then (on the
# next line) its last output.
best_of() {
  local best= out t0 t1 t
  for _ in $(seq "$repeat"); do
    t0=$(date +%s.%N)
    out=$("$@")
    t1=$(date +%s.%N)
    t=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
    best=$(awk -v t="$t" -v b="${best:-1e9}" 'BEGIN { print (t < b ? t : b) }')
  done
  printf '%s\n%s\n' "$best" "$out"
}
ours() { "$bin/deskew" --backend "${BACKEND:-cpu}" --format csv "$1" | tail -1 | cut -d, -f3; }
theirs() { "$convert" "$1" -deskew 40% -format '%[deskew:angle]' info:; }
# err FOUND STRAIGHT TURN: |FOUND − (STRAIGHT + TURN)| (awk reads 1e-05 too).
err() { awk -v f="$1" -v s="$2" -v t="$3" 'BEGIN { d = f - (s + t); print (d < 0 ? -d : d) }'; }

echo "page,turn,ours,ours_err,ours_s,imagemagick,imagemagick_err,imagemagick_s"
for page in $PAGES; do
  "$bin/pad" --border 80 --fill 255 "$page" >"$work/padded.pgm"
  ours0=$(ours "$work/padded.pgm")
  theirs0=$(theirs "$work/padded.pgm")
  for turn in ${TURNS:-0 0.7 -0.7 2.3 -4.1 9.5 14 -14 0.33}; do
    "$bin/rotate" --bilinear --fill 255 -- "$turn" "$work/padded.pgm" >"$work/turned.pgm"
    { read -r ours_s; read -r a; } < <(best_of ours "$work/turned.pgm")
    { read -r theirs_s; read -r b; } < <(best_of theirs "$work/turned.pgm")
    printf '%s,%s,%s,%.2f,%.3f,%s,%.2f,%.3f\n' "$(basename "$page")" "$turn" \
      "$a" "$(err "$a" "$ours0" "$turn")" "$ours_s" "$b" "$(err "$b" "$theirs0" "$turn")" "$theirs_s"
  done
done
