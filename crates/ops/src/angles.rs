//! A list of angles in degrees, as `--angles` takes it: `A:B:STEP` (numpy's `arange(A, B, STEP)`:
//! A, A + STEP, A + 2 STEP ... while short of B, B itself excluded) or a comma-separated list
//! (`0,45,90.5`). The one parser of every tool that works in many directions at once (`radon`,
//! `colhist --angles`).

use std::fmt;
use std::str::FromStr;

/// At most this many angles: enough for 0.001-degree steps over a half turn, few enough that
/// a mistyped step is refused rather than run for hours.
pub const MAX_ANGLES: usize = 1 << 20;

/// The angles, in the order given (degrees, each finite).
#[derive(Debug, Clone, PartialEq)]
pub struct Angles(pub Vec<f64>);

impl Angles {
    /// numpy's `arange(start, stop, step)`: `ceil((stop - start) / step)` angles (none if that
    /// is not positive), angle i being `start + i * step` (each product and sum rounded once, in
    /// `f64`, as numpy computes them).
    pub fn range(start: f64, stop: f64, step: f64) -> Result<Angles, String> {
        if !(start.is_finite() && stop.is_finite() && step.is_finite()) {
            return Err("the start, end and step must be finite numbers".into());
        }
        if step == 0.0 {
            return Err("the step must not be 0".into());
        }
        let n = ((stop - start) / step).ceil();
        if n > MAX_ANGLES as f64 {
            return Err(format!("that is {n} angles, more than the {MAX_ANGLES} allowed"));
        }
        let n = if n > 0.0 { n as usize } else { 0 };
        if n == 0 {
            return Err(format!("no angle is in [{start}, {stop}) by steps of {step}"));
        }
        Ok(Angles((0..n).map(|i| start + i as f64 * step).collect()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        self.0.iter().copied()
    }
}

/// The annotation key (`# histopipe-angles A,B,C` in an NPY header) of the angles of a frame's
/// columns: `radon` writes it, `iradon` reads it.
pub const ANNOTATION: &str = "angles";

/// The longest list written as an annotation: np.load refuses an NPY header over 10000 bytes.
const MAX_ANNOTATION: usize = 3000;

impl Angles {
    /// The angles as an annotation's value (the list, [`Angles`]'s `Display`), if it is at most
    /// 3000 characters long (0:180:1, 180 whole degrees, takes 609).
    pub fn annotation(&self) -> Option<String> {
        Some(self.to_string()).filter(|text| text.len() <= MAX_ANNOTATION)
    }
}

impl Default for Angles {
    /// `0:180:1`: every whole degree of a half turn (scikit-image's `radon` default).
    fn default() -> Angles {
        Angles::range(0.0, 180.0, 1.0).expect("0:180:1 is a valid range")
    }
}

fn number(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("'{}' is not a number of degrees", text.trim()))
}

impl FromStr for Angles {
    type Err = String;

    /// `A:B:STEP`, `A:B` (step 1) or `A,B,C...`; a single number is a list of one.
    fn from_str(text: &str) -> Result<Angles, String> {
        let text = text.trim();
        if text.contains(':') {
            let parts: Vec<&str> = text.split(':').collect();
            let (start, stop, step) = match parts.as_slice() {
                [a, b] => (number(a)?, number(b)?, 1.0),
                [a, b, s] => (number(a)?, number(b)?, number(s)?),
                _ => return Err("expected START:END:STEP (degrees, END excluded) or a list A,B,C".into()),
            };
            return Angles::range(start, stop, step);
        }
        let list = text.split(',').map(number).collect::<Result<Vec<f64>, String>>()?;
        if list.len() > MAX_ANGLES {
            return Err(format!("more than {MAX_ANGLES} angles"));
        }
        Ok(Angles(list))
    }
}

impl fmt::Display for Angles {
    /// The angles as a list (`0,1,2`), each in Rust's shortest round-trip form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{a}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_numpys_arange() {
        assert_eq!(Angles::default().len(), 180);
        assert_eq!(Angles::default().0[179], 179.0);
        let a: Angles = "0:1:0.1".parse().unwrap();
        // numpy: len(np.arange(0, 1, 0.1)) == 10, and 0.30000000000000004 is its fourth.
        assert_eq!(a.len(), 10);
        assert_eq!(a.0[3], 3.0 * 0.1);
        let a: Angles = "10:-10:-5".parse().unwrap();
        assert_eq!(a.0, vec![10.0, 5.0, 0.0, -5.0]);
        let a: Angles = "-3:3".parse().unwrap();
        assert_eq!(a.0, vec![-3.0, -2.0, -1.0, 0.0, 1.0, 2.0]);
        let a: Angles = "0:180:0.1".parse().unwrap();
        assert_eq!(a.len(), 1800);
    }

    #[test]
    fn lists_keep_their_order() {
        let a: Angles = "90, 0,45.5".parse().unwrap();
        assert_eq!(a.0, vec![90.0, 0.0, 45.5]);
        assert_eq!(a.to_string(), "90,0,45.5");
        assert_eq!("7".parse::<Angles>().unwrap().0, vec![7.0]);
    }

    #[test]
    fn bad_lists_are_refused() {
        for bad in
            ["", "0:180:0", "5:5:1", "0:10:-1", "a:b:c", "0:1:2:3", "1,,2", "nan", "0:inf:1", "0:1e9:1e-3"]
        {
            assert!(bad.parse::<Angles>().is_err(), "{bad}");
        }
    }
}
