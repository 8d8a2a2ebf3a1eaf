#!/usr/bin/env bash
# deskew against ImageMagick's -deskew on the same turned pages: each fixture padded with white,
# turned by known angles with our rotate --bilinear, then measured by both; prints
# page,turn,ours,ours_s,imagemagick,imagemagick_s. Needs the tools on PATH and ImageMagick's
# `convert` (set CONVERT to its path; LD_LIBRARY_PATH / MAGICK_CONFIGURE_PATH for an unpacked one).
# ImageMagick's -rotate is clockwise, so its deskew:angle is expected with the opposite sign.
set -euo pipefail
convert=${CONVERT:-convert}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
echo "page,turn,ours,ours_s,imagemagick,imagemagick_s"
for page in ${PAGES:-tests/fixtures/text.pgm tests/fixtures/page.pgm}; do
  pad --border 80 --fill 255 "$page" >"$work/padded.pgm"
  for turn in ${TURNS:-0 0.7 -0.7 2.3 -4.1 9.5 14 -14}; do
    rotate --bilinear --fill 255 -- "$turn" "$work/padded.pgm" >"$work/turned.pgm"
    t0=$(now)
    ours=$(deskew --backend "${BACKEND:-cpu}" --format csv "$work/turned.pgm" | tail -1 | cut -d, -f3)
    t1=$(now)
    if command -v "$convert" >/dev/null; then
      theirs=$("$convert" "$work/turned.pgm" -deskew 40% -format '%[deskew:angle]' info:)
    else
      theirs=NA
    fi
    t2=$(now)
    printf '%s,%s,%s,%.3f,%s,%.3f\n' "$(basename "$page")" "$turn" "$ours" "$(echo "$t1 - $t0" | bc)" \
      "$theirs" "$(echo "$t2 - $t1" | bc)"
  done
done
