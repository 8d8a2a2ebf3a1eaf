//! `colhist --line` and `--segment`: the one column of a frame that a line of the original picks,
//! which must be vertical in the frame, and for a segment the rows between its ends.
//!
//! The column is floor(x + 0.5) of the ends' mean x in the frame; a segment's rows run from
//! floor(y + 0.5) of its upper end to that of its lower one, both included.

use std::ops::Range;

use histopipe_frame::{Frame, Line};

use crate::OpError;

/// A distance in pixels under which the two ends of `--line` (`--segment`) count as in one column:
/// far below a pixel, far above the rounding of the geometry's composed maps.
const VERTICAL_TOLERANCE: f64 = 1e-6;

/// `--line` or `--segment`: two points of the original, and which of the two options gave them.
#[derive(Debug, Clone, Copy)]
pub struct Along {
    pub points: Line,
    /// `--segment`: only the rows between the points; `--line`: the whole column.
    pub segment: bool,
}

/// The pixels `--line` or `--segment` picks in a frame: rows `rows` of column `x`.
#[derive(Debug, Clone)]
pub struct Column {
    pub x: usize,
    pub rows: Range<usize>,
}

impl Along {
    /// The parameter that gave the points, as errors name it: `segment` or `line`.
    pub fn param(&self) -> &'static str {
        if self.segment {
            "segment"
        } else {
            "line"
        }
    }

    /// The pixels of `frame` these points pick: the column the line lies on, which must be
    /// vertical in the frame, and for a segment the rows from the one nearest one end to the one
    /// nearest the other (floor(y + 0.5), as the column's x), which must be rows of the frame.
    pub fn column(&self, frame: &Frame) -> Result<Column, OpError> {
        let param = self.param();
        let ((x0, y0), (x1, y1)) =
            self.points.in_frame(&frame.geometry_or_identity()).map_err(OpError::invalid)?;
        if (x1 - x0).abs() > VERTICAL_TOLERANCE * (1.0 + (y1 - y0).abs()) {
            return Err(OpError::invalid("")
                .and_param(param)
                .and_text(format!(
                    " is not vertical in this frame (its ends are at x = {x0:.3} and x = {x1:.3}): \
                     turn it with rotate "
                ))
                .and_param(param)
                .and_text(" first"));
        }
        let x = ((x0 + x1) / 2.0 + 0.5).floor();
        if !(x >= 0.0 && x < frame.width as f64) {
            return Err(OpError::invalid("")
                .and_param(param)
                .and_text(format!(" lies at x = {x:.0}, outside the {}-pixel-wide frame", frame.width)));
        }
        let rows = if self.segment {
            let (top, bottom) = ((y0.min(y1) + 0.5).floor(), (y0.max(y1) + 0.5).floor());
            if !(top >= 0.0 && bottom < frame.height as f64) {
                return Err(OpError::invalid("").and_param(param).and_text(format!(
                    " leaves the frame: its ends are at rows {top:.0} and {bottom:.0} of a {}-row frame",
                    frame.height
                )));
            }
            top as usize..bottom as usize + 1
        } else {
            0..frame.height
        };
        Ok(Column { x: x as usize, rows })
    }
}
