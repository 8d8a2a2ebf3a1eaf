//! The `# histopipe-hough` annotation: an accumulator frame's layout, written by `hough-vote` and
//! read back, checked against the frame's size, by `hough-lines`.

use histopipe_frame::Frame;

use super::{HoughParams, HoughSpace};
use crate::OpError;

/// The annotation key of an accumulator's parameterization (`# histopipe-hough ...`).
pub const ANNOTATION: &str = "hough";

impl HoughSpace {
    /// The annotation value that describes this layout.
    pub fn annotation(&self) -> String {
        let p = &self.params;
        format!(
            "theta-min={} theta-max={} theta-step={} rho-step={} rho-offset={} source={}x{}",
            p.theta_min,
            p.theta_max,
            p.theta_step,
            p.rho_step,
            self.rho_offset(),
            self.width,
            self.height
        )
    }

    /// The layout of an accumulator frame, from its annotation; checked against its size.
    pub fn of_frame(frame: &Frame) -> Result<HoughSpace, OpError> {
        let text = frame.annotation(ANNOTATION).ok_or_else(|| {
            OpError::invalid(
                "no '# histopipe-hough' header comment: not an accumulator written by hough-vote",
            )
        })?;
        let bad = |why: &str| OpError::invalid(format!("bad '# histopipe-hough {text}' comment: {why}"));
        let mut params = HoughParams::default();
        let (mut offset, mut source) = (None, None);
        for field in text.split_whitespace() {
            let (key, value) = field.split_once('=').ok_or_else(|| bad("fields are KEY=VALUE"))?;
            let num = || value.parse::<f64>().map_err(|_| bad(&format!("{key} is not a number")));
            match key {
                "theta-min" => params.theta_min = num()?,
                "theta-max" => params.theta_max = num()?,
                "theta-step" => params.theta_step = num()?,
                "rho-step" => params.rho_step = num()?,
                "rho-offset" => offset = Some(value.parse::<usize>().map_err(|_| bad("bad rho-offset"))?),
                "source" => source = Some(histopipe_frame::parse_size(value).map_err(|e| bad(&e))?),
                _ => {} // later versions may add fields
            }
        }
        let (w, h) = source.ok_or_else(|| bad("no source=WxH"))?;
        let space = HoughSpace::new(params, w, h).map_err(|e| bad(&e.naming(key_of)))?;
        if (frame.width, frame.height) != (space.rhos, space.thetas) || offset != Some(space.rho_offset()) {
            return Err(bad(&format!(
                "it describes a {}x{} accumulator with rho-offset {}, and the frame is {}x{}",
                space.rhos,
                space.thetas,
                space.rho_offset(),
                frame.width,
                frame.height
            )));
        }
        Ok(space)
    }
}

/// The annotation's key for a parameter of [`HoughParams`]: an error about an annotation's
/// value names the value as the annotation does.
fn key_of(param: &'static str) -> &'static str {
    match param {
        "theta_min" => "theta-min",
        "theta_max" => "theta-max",
        "theta_step" => "theta-step",
        "rho_step" => "rho-step",
        other => other,
    }
}
