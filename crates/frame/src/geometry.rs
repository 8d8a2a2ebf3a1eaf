//! Geometry metadata: where a frame's pixels came from in the original image.
//!
//! Coordinates are pixel indices: the centre of pixel (x, y) is the point (x, y). A frame's
//! [`Geometry`] maps those coordinates to the original image's, and records the original's size,
//! so that a later filter can tell data pixels from padding and find a line of the original.
//! In PGM and PAM headers it is one comment line, so plain viewers still open the file:
//!
//! `# histopipe-geometry A B C D E F W H`
//!
//! meaning X = A x + B y + C, Y = D x + E y + F, original size W x H. Numbers are written in
//! the shortest form that reads back to the same `f64`.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// The affine map (x, y) -> (a x + b y + c, d x + e y + f).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Affine {
    pub a: f64,
    pub b: f64,
    pub c: f64,
    pub d: f64,
    pub e: f64,
    pub f: f64,
}

impl Affine {
    pub const IDENTITY: Affine = Affine { a: 1.0, b: 0.0, c: 0.0, d: 0.0, e: 1.0, f: 0.0 };

    pub fn translation(dx: f64, dy: f64) -> Affine {
        Affine { c: dx, f: dy, ..Affine::IDENTITY }
    }

    pub fn apply(&self, x: f64, y: f64) -> (f64, f64) {
        (self.a * x + self.b * y + self.c, self.d * x + self.e * y + self.f)
    }

    /// `self` after `first`: the map x -> self(first(x)).
    pub fn after(&self, first: &Affine) -> Affine {
        Affine {
            a: self.a * first.a + self.b * first.d,
            b: self.a * first.b + self.b * first.e,
            c: self.a * first.c + self.b * first.f + self.c,
            d: self.d * first.a + self.e * first.d,
            e: self.d * first.b + self.e * first.e,
            f: self.d * first.c + self.e * first.f + self.f,
        }
    }

    /// The inverse map, or `None` if the map is singular.
    pub fn inverse(&self) -> Option<Affine> {
        let det = self.a * self.e - self.b * self.d;
        if det == 0.0 || !det.is_finite() {
            return None;
        }
        let (a, b, d, e) = (self.e / det, -self.b / det, -self.d / det, self.a / det);
        Some(Affine { a, b, c: -(a * self.c + b * self.f), d, e, f: -(d * self.c + e * self.f) })
    }
}

/// A frame's place in the original image.
#[derive(Debug, Clone, PartialEq)]
pub struct Geometry {
    /// From this frame's pixel coordinates to the original's.
    pub to_original: Affine,
    pub original_width: usize,
    pub original_height: usize,
}

pub(crate) const COMMENT_KEY: &str = "histopipe-geometry";

impl Geometry {
    /// The frame is the original.
    pub fn identity(width: usize, height: usize) -> Geometry {
        Geometry { to_original: Affine::IDENTITY, original_width: width, original_height: height }
    }

    /// The geometry of a frame whose pixel (x, y) is this frame's pixel `new_to_old(x, y)`.
    pub fn then(&self, new_to_old: &Affine) -> Geometry {
        Geometry { to_original: self.to_original.after(new_to_old), ..self.clone() }
    }

    /// Whether the point (x, y) of this frame falls on a pixel of the original: its position in the
    /// original, rounded to the nearest pixel (halves up), is inside the original's bounds.
    pub fn is_original(&self, x: f64, y: f64) -> bool {
        self.bound_tests(x, y).iter().all(|&t| t)
    }

    /// The four tests [`Geometry::is_original`] joins: rx >= 0, ry >= 0, rx < width, ry < height.
    fn bound_tests(&self, x: f64, y: f64) -> [bool; 4] {
        let (ox, oy) = self.to_original.apply(x, y);
        let (rx, ry) = ((ox + 0.5).floor(), (oy + 0.5).floor());
        [rx >= 0.0, ry >= 0.0, rx < self.original_width as f64, ry < self.original_height as f64]
    }

    /// The pixels x in 0..width of row y whose centres [`Geometry::is_original`] accepts, found with
    /// O(log width) evaluations of that same test; `None` when a coefficient of the map is not
    /// below 1e280 in magnitude, where the caller must test every pixel.
    ///
    /// Why they form one range: with the coefficients bounded, nothing overflows (|a x| < 1e300 for
    /// any x < 2^64), so no NaN arises, and for a fixed y the mapped X = ((a x + b y) + c) is a
    /// non-decreasing or non-increasing function of x (each correctly rounded operation is monotone
    /// in its operand), and so is floor(X + 0.5); the same holds for Y. Each of the four bound
    /// tests therefore changes value at most once along the row, its passing pixels are a prefix
    /// or a suffix of it, and the pixels passing all four are their intersection.
    pub fn row_span(&self, y: usize, width: usize) -> Option<Range<usize>> {
        self.bounded().then(|| self.span_from(y, width, &mut [None; 4]))
    }

    /// [`Geometry::row_span`] of each row of `rows`, the same ranges: each row's searches start
    /// where the row before's tests flipped (a test flips at most once along a row, so any
    /// search finds the same place), a few evaluations where a search of the whole row takes
    /// log2(width) for each test.
    pub fn row_spans(&self, rows: Range<usize>, width: usize) -> Option<Vec<Range<usize>>> {
        let mut flips = [None; 4];
        self.bounded().then(|| rows.map(|y| self.span_from(y, width, &mut flips)).collect())
    }

    /// Whether the map's coefficients are bounded as [`Geometry::row_span`] needs.
    fn bounded(&self) -> bool {
        let m = &self.to_original;
        [m.a, m.b, m.c, m.d, m.e, m.f].iter().all(|v| v.abs() < 1e280)
    }

    /// Row y's span (see [`Geometry::row_span`]), each test's flip searched for from `flips[k]`,
    /// where test k flipped along the row before (if it did), and left there for the next.
    fn span_from(&self, y: usize, width: usize, flips: &mut [Option<usize>; 4]) -> Range<usize> {
        let (mut lo, mut hi) = (0, width);
        for (k, near) in flips.iter_mut().enumerate() {
            if width == 0 || lo >= hi {
                break;
            }
            let test = |x: usize| self.bound_tests(x as f64, y as f64)[k];
            let first = test(0);
            if first == test(width - 1) {
                if !first {
                    return 0..0;
                }
                continue;
            }
            let b = flip(|x| test(x) == first, width, *near);
            *near = Some(b);
            if first {
                hi = hi.min(b);
            } else {
                lo = lo.max(b);
            }
        }
        lo..hi.max(lo)
    }

    /// Parses the text after `#` of a header comment; `None` if it is not a geometry comment.
    pub(crate) fn parse_comment(comment: &str) -> Option<Result<Geometry, String>> {
        let rest = comment.trim().strip_prefix(COMMENT_KEY)?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // The comment is input: shown escaped, as every quoted input is.
        let bad = || format!("bad geometry comment '{}'", comment.trim().escape_default());
        if fields.len() != 8 {
            return Some(Err(bad()));
        }
        let mut m = [0f64; 6];
        for (slot, field) in m.iter_mut().zip(&fields) {
            match field.parse::<f64>() {
                Ok(v) if v.is_finite() => *slot = v,
                _ => return Some(Err(bad())),
            }
        }
        let (Ok(w), Ok(h)) = (fields[6].parse::<usize>(), fields[7].parse::<usize>()) else {
            return Some(Err(bad()));
        };
        let [a, b, c, d, e, f] = m;
        Some(Ok(Geometry { to_original: Affine { a, b, c, d, e, f }, original_width: w, original_height: h }))
    }
}

/// The first x in 1..width where `same(x)` is false, given `same(0)` and not `same(width - 1)`,
/// `same` being true on a prefix of 0..width: bracketed from `near` outward in doubling steps,
/// then halved.
fn flip(same: impl Fn(usize) -> bool, width: usize, near: Option<usize>) -> usize {
    // same(a) and not same(b), throughout.
    let (mut a, mut b) = (0, width - 1);
    if let Some(g) = near.filter(|&g| a < g && g < b) {
        let mut step = 1;
        if same(g) {
            a = g;
            while a + step < b {
                if !same(a + step) {
                    b = a + step;
                    break;
                }
                a += step;
                step *= 2;
            }
        } else {
            b = g;
            while a + step < b {
                if same(b - step) {
                    a = b - step;
                    break;
                }
                b -= step;
                step *= 2;
            }
        }
    }
    while b - a > 1 {
        let mid = a + (b - a) / 2;
        if same(mid) {
            a = mid;
        } else {
            b = mid;
        }
    }
    b
}

/// A point (x, y) in pixel coordinates.
pub type Point = (f64, f64);

/// A line of the original image, through two points, or the segment between them: `X0,Y0,X1,Y1`
/// on the command line (`rotate --line`, `colhist --line`, and `--segment` of both).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    pub from: Point,
    pub to: Point,
}

impl FromStr for Line {
    type Err = String;

    fn from_str(s: &str) -> Result<Line, String> {
        let v: Vec<f64> = s
            .split(',')
            .map(|t| t.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect::<Option<_>>()
            .ok_or("expected four numbers X0,Y0,X1,Y1")?;
        let [x0, y0, x1, y1] = v[..] else {
            return Err(format!("expected four numbers X0,Y0,X1,Y1, got {}", v.len()));
        };
        if (x0, y0) == (x1, y1) {
            return Err("the two points are the same".into());
        }
        Ok(Line { from: (x0, y0), to: (x1, y1) })
    }
}

impl Line {
    /// The line of the original through `point` that is vertical in a frame of `geometry`, as
    /// two points of the original: the frame's points `half` pixels above and below `point`'s
    /// place in the frame (x, y - half) and (x, y + half), mapped back through the geometry, the
    /// first on top. `colhist --angles` with `--line` (`half` 1) and `--segment` (the segment's
    /// half-length) hands these to the column's count.
    ///
    /// # Example
    /// ```
    /// use histopipe_frame::{Geometry, Line};
    /// let line = Line::vertical_through((3.0, 4.0), &Geometry::identity(10, 10), 2.0).unwrap();
    /// assert_eq!((line.from, line.to), ((3.0, 2.0), (3.0, 6.0)));
    /// ```
    pub fn vertical_through(point: Point, geometry: &Geometry, half: f64) -> Result<Line, String> {
        let inv = geometry.to_original.inverse().ok_or("the frame's geometry cannot be inverted")?;
        let (x, y) = inv.apply(point.0, point.1);
        let m = &geometry.to_original;
        Ok(Line { from: m.apply(x, y - half), to: m.apply(x, y + half) })
    }

    /// The two points in the coordinates of a frame with geometry `geometry`.
    pub fn in_frame(&self, geometry: &Geometry) -> Result<(Point, Point), String> {
        let inv = geometry.to_original.inverse().ok_or("the frame's geometry cannot be inverted")?;
        Ok((inv.apply(self.from.0, self.from.1), inv.apply(self.to.0, self.to.1)))
    }
}

impl fmt::Display for Geometry {
    /// The header comment's text, without the leading `#`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.to_original;
        write!(
            f,
            " {COMMENT_KEY} {} {} {} {} {} {} {} {}",
            m.a, m.b, m.c, m.d, m.e, m.f, self.original_width, self.original_height
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_from_four_numbers() {
        assert!("1,2,3".parse::<Line>().is_err());
        assert!("1,2,1,2".parse::<Line>().unwrap_err().contains("same"));
        assert_eq!("0, 0,4,4.5".parse::<Line>().unwrap(), Line { from: (0.0, 0.0), to: (4.0, 4.5) });
    }

    #[test]
    fn row_spans_are_the_pixels_is_original_accepts() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for case in 0..200 {
            let (w, h) = (1 + (next() * 120.0) as usize, 1 + (next() * 120.0) as usize);
            let turn = next() * std::f64::consts::TAU;
            let (s, c) = turn.sin_cos();
            let scale = if case % 4 == 0 { 0.0 } else { 0.5 + next() };
            let m = Affine {
                a: c * scale,
                b: -s * scale,
                c: next() * 80.0 - 20.0,
                d: s * scale,
                e: c * scale,
                f: next() * 80.0 - 20.0,
            };
            let g = Geometry {
                to_original: m,
                original_width: 1 + (next() * 90.0) as usize,
                original_height: 60,
            };
            let spans = g.row_spans(0..h, w).unwrap();
            for (y, near) in spans.into_iter().enumerate() {
                let span = g.row_span(y, w).unwrap();
                assert_eq!(near, span, "{g:?} row {y}");
                for x in 0..w {
                    assert_eq!(span.contains(&x), g.is_original(x as f64, y as f64), "{g:?} at ({x}, {y})");
                }
            }
        }
        let huge =
            Geometry { to_original: Affine { a: 1e300, ..Affine::IDENTITY }, ..Geometry::identity(4, 4) };
        assert_eq!(huge.row_span(0, 4), None);
        assert_eq!(huge.row_spans(0..4, 4), None);
    }

    #[test]
    fn comment_round_trips_exactly() {
        let g = Geometry {
            to_original: Affine { a: 0.1 + 0.2, b: -1.0 / 3.0, c: 1e-300, d: 7.0, e: -0.0, f: 123456.789 },
            original_width: 640,
            original_height: 480,
        };
        let text = g.to_string();
        assert_eq!(Geometry::parse_comment(&text).unwrap().unwrap(), g);
    }

    #[test]
    fn bad_comments_are_errors_and_others_are_ignored() {
        assert!(Geometry::parse_comment(" made by GIMP").is_none());
        assert!(Geometry::parse_comment(" histopipe-geometry 1 0 0 0 1 0 10").unwrap().is_err());
        assert!(Geometry::parse_comment(" histopipe-geometry 1 0 x 0 1 0 10 10").unwrap().is_err());
        assert!(Geometry::parse_comment(" histopipe-geometry 1 0 inf 0 1 0 10 10").unwrap().is_err());
    }

    #[test]
    fn compose_and_invert() {
        let rot = Affine { a: 0.6, b: -0.8, c: 3.0, d: 0.8, e: 0.6, f: -2.0 };
        let t = Affine::translation(5.0, 7.0);
        let both = rot.after(&t);
        let (x, y) = both.apply(1.5, -2.0);
        let (ex, ey) = rot.apply(6.5, 5.0);
        assert!((x - ex).abs() < 1e-12 && (y - ey).abs() < 1e-12);
        let inv = both.inverse().unwrap();
        let (bx, by) = inv.apply(x, y);
        assert!((bx - 1.5).abs() < 1e-12 && (by + 2.0).abs() < 1e-12);
    }

    #[test]
    fn original_pixels_after_a_translation() {
        let g = Geometry::identity(4, 3).then(&Affine::translation(-2.0, -1.0));
        assert!(g.is_original(2.0, 1.0));
        assert!(g.is_original(5.0, 3.0));
        assert!(!g.is_original(1.0, 1.0));
        assert!(!g.is_original(6.0, 1.0));
        assert!(!g.is_original(2.0, 4.0));
    }
}
