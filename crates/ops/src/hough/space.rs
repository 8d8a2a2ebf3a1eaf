//! The accumulator's layout: its axes as given ([`HoughParams`]), their rows and columns for an
//! edge map's size and OpenCV's cosine and sine tables ([`HoughSpace`]), and the column a pixel
//! votes for.

use crate::OpError;

/// The most cells an accumulator may have (4 GiB of u32 counters would be absurd for lines).
pub const MAX_CELLS: u64 = 1 << 28;

/// The accumulator's axes as given on the command line: angles in degrees, ρ step in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoughParams {
    pub theta_min: f64,
    pub theta_max: f64,
    pub theta_step: f64,
    pub rho_step: f64,
}

impl Default for HoughParams {
    /// OpenCV's `HoughLines(img, 1, CV_PI / 180, ...)`: θ in [0°, 180°) by 1°, ρ by 1 pixel.
    fn default() -> Self {
        HoughParams { theta_min: 0.0, theta_max: 180.0, theta_step: 1.0, rho_step: 1.0 }
    }
}

/// An accumulator's layout for a `width x height` source: see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoughSpace {
    pub params: HoughParams,
    /// The edge map's size.
    pub width: usize,
    pub height: usize,
    /// Rows of the accumulator (angles).
    pub thetas: usize,
    /// Columns of the accumulator (distances).
    pub rhos: usize,
}

impl HoughParams {
    /// Checks what holds for every edge map: positive, finite steps and a range of angles; returns
    /// the angle span in steps.
    pub fn check(&self) -> Result<f64, OpError> {
        let HoughParams { theta_min, theta_max, theta_step, rho_step } = *self;
        if !(theta_step > 0.0 && theta_step.is_finite() && (theta_step.to_radians() as f32) > 0.0) {
            return Err(OpError::param_is("theta_step", theta_step, "must be a positive number of degrees"));
        }
        if !(rho_step > 0.0
            && rho_step.is_finite()
            && (rho_step as f32) > 0.0
            && (rho_step as f32).is_finite())
        {
            return Err(OpError::param_is("rho_step", rho_step, "must be a positive number of pixels"));
        }
        if !(theta_min.is_finite() && theta_max.is_finite() && theta_max >= theta_min) {
            return Err(OpError::param_is("theta_max", theta_max, "must be at least ")
                .and_param("theta_min")
                .and_text(format!(" {theta_min}")));
        }
        let step = (theta_step.to_radians() as f32) as f64;
        let span = (theta_max.to_radians() - theta_min.to_radians()) / step;
        if span > 1e7 {
            return Err(OpError::invalid("too many angles: raise ").and_param("theta_step"));
        }
        Ok(span)
    }
}

impl HoughSpace {
    /// The layout for a `width x height` edge map, or why the parameters cannot make one.
    pub fn new(params: HoughParams, width: usize, height: usize) -> Result<HoughSpace, OpError> {
        let span = params.check()?;
        let HoughParams { theta_step, rho_step, .. } = params;
        let step = (theta_step.to_radians() as f32) as f64;
        let mut thetas = span.floor() as i64 + 1;
        if thetas > 1 && (std::f64::consts::PI - (thetas - 1) as f64 * step).abs() < step / 2.0 {
            thetas -= 1;
        }
        let rhos = (((width + height) * 2 + 1) as f32 / rho_step as f32).round_ties_even();
        if !(1.0..=1e9).contains(&rhos) {
            return Err(OpError::param_is("rho_step", rho_step, "gives no distance bins"));
        }
        let space = HoughSpace { params, width, height, thetas: thetas as usize, rhos: rhos as usize };
        if space.thetas as u64 * space.rhos as u64 > MAX_CELLS {
            return Err(OpError::invalid(format!(
                "the accumulator would have {} x {} cells, over {MAX_CELLS}: raise ",
                space.rhos, space.thetas
            ))
            .and_param("theta_step")
            .and_text(" or ")
            .and_param("rho_step"));
        }
        space.check_votes_fit()?;
        Ok(space)
    }

    /// Every vote must land inside the accumulator. The vote is monotone in x and in y for a fixed
    /// angle (rounded products and sums are monotone), so the four corners bound it.
    pub(super) fn check_votes_fit(&self) -> Result<(), OpError> {
        let (cos, sin) = self.tables();
        let (xm, ym) = (self.width.saturating_sub(1), self.height.saturating_sub(1));
        for n in 0..self.thetas {
            for (x, y) in [(0, 0), (xm, 0), (0, ym), (xm, ym)] {
                let c = vote_column(x, y, cos[n], sin[n], self.rho_offset());
                if c < 0 || c >= self.rhos as i64 {
                    return Err(OpError::param_is(
                        "rho_step",
                        self.params.rho_step,
                        format!(
                            "is too coarse for a {}x{} frame: votes would fall outside the accumulator",
                            self.width, self.height
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The column of distance 0: (m − 1) / 2.
    pub fn rho_offset(&self) -> usize {
        (self.rhos - 1) / 2
    }

    fn theta_step_f32(&self) -> f32 {
        self.params.theta_step.to_radians() as f32
    }

    fn theta_min_f32(&self) -> f32 {
        self.params.theta_min.to_radians() as f32
    }

    /// OpenCV's cosine and sine tables, divided by ρ_step.
    pub fn tables(&self) -> (Vec<f32>, Vec<f32>) {
        let irho = 1.0f32 / self.params.rho_step as f32;
        let step = self.theta_step_f32();
        let mut ang = self.theta_min_f32();
        let (mut cos, mut sin) = (Vec::with_capacity(self.thetas), Vec::with_capacity(self.thetas));
        for _ in 0..self.thetas {
            cos.push(((ang as f64).cos() * irho as f64) as f32);
            sin.push(((ang as f64).sin() * irho as f64) as f32);
            ang += step;
        }
        (cos, sin)
    }

    /// The distance of column `c`, as OpenCV reports it.
    pub fn rho(&self, c: usize) -> f32 {
        (c as i64 - self.rho_offset() as i64) as f32 * self.params.rho_step as f32
    }

    /// The angle of row `n` in radians, as OpenCV reports it.
    pub fn theta(&self, n: usize) -> f32 {
        self.theta_min_f32() + n as f32 * self.theta_step_f32()
    }

    /// The angle of row `n` in degrees on the nominal grid, θ_min + n θ_step (f64).
    pub fn theta_degrees(&self, n: usize) -> f64 {
        self.params.theta_min + n as f64 * self.params.theta_step
    }
}

/// The column pixel (x, y) votes for, OpenCV's float arithmetic exactly.
pub(super) fn vote_column(x: usize, y: usize, cos: f32, sin: f32, offset: usize) -> i64 {
    (x as f32 * cos + y as f32 * sin).round_ties_even() as i64 + offset as i64
}
