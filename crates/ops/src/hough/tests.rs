//! `hough`'s tests: OpenCV's layout and loop, the annotation, every split of the CPU's work.

use histopipe_frame::{Frame, Pixels};

use super::space::vote_column;
use super::vote::MAGIC_MAX_RHOS;
use super::*;
use crate::Op;

#[test]
fn auto_votes_in_shared_memory_while_the_edge_list_fits_in_cache() {
    assert_eq!(Strategy::Auto.for_points(0), Strategy::Shared);
    assert_eq!(Strategy::Auto.for_points(AUTO_SHARED_MAX_POINTS), Strategy::Shared);
    assert_eq!(Strategy::Auto.for_points(AUTO_SHARED_MAX_POINTS + 1), Strategy::Global);
    assert_eq!(Strategy::Shared.for_points(u64::MAX), Strategy::Shared);
    assert_eq!(Strategy::Global.for_points(0), Strategy::Global);
}

#[test]
fn default_layout_is_opencvs() {
    let s = HoughSpace::new(HoughParams::default(), 384, 191).unwrap();
    assert_eq!((s.thetas, s.rhos, s.rho_offset()), (180, 2 * (384 + 191) + 1, 384 + 191));
    assert_eq!(s.theta(90), 90.0f32 * (std::f64::consts::PI / 180.0) as f32);
    // A full turn keeps its last angle, 360°: only a span of π drops it (OpenCV's rule).
    let full = HoughSpace::new(HoughParams { theta_max: 360.0, ..Default::default() }, 10, 10).unwrap();
    assert_eq!(full.thetas, 361);
}

#[test]
fn a_horizontal_line_peaks_at_90_degrees() {
    let (w, h) = (40, 30);
    let px: Vec<u8> = (0..w * h).map(|i| if i / w == 12 { 255 } else { 0 }).collect();
    let f = Frame::new(w, h, 255, Pixels::U8(px.into()));
    let acc = HoughVote { params: HoughParams::default(), strategy: Strategy::Auto }.cpu(&f).unwrap();
    let lines = HoughLines { threshold: 30, top: None }.cpu(&acc).unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!((lines[0].rho, lines[0].theta_degrees, lines[0].votes), (12.0, 90.0, 40));
}

#[test]
fn annotation_round_trips_and_is_checked() {
    let s = HoughSpace::new(
        HoughParams { theta_min: -90.0, theta_max: 90.0, theta_step: 0.5, rho_step: 0.7 },
        33,
        21,
    )
    .unwrap();
    let mut f = Frame::new(s.rhos, s.thetas, 65535, Pixels::U16(vec![0; s.rhos * s.thetas].into()));
    f.set_annotation(ANNOTATION, &s.annotation());
    assert_eq!(HoughSpace::of_frame(&f).unwrap(), s);
    f.set_annotation(ANNOTATION, "theta-min=0 source=33x21");
    assert!(HoughSpace::of_frame(&f).unwrap_err().to_string().contains("frame is"));
}

/// OpenCV's loop as it reads: pixel by pixel, every angle, `round_ties_even`.
fn reference_votes(space: &HoughSpace, frame: &Frame) -> Vec<u32> {
    let (cos, sin) = space.tables();
    let mut acc = vec![0u32; space.thetas * space.rhos];
    for i in 0..frame.pixel_count() {
        if frame.pixels.get(i) != 0 {
            let (x, y) = (i % frame.width, i / frame.width);
            for n in 0..space.thetas {
                acc[n * space.rhos + vote_column(x, y, cos[n], sin[n], space.rho_offset()) as usize] += 1;
            }
        }
    }
    acc
}

#[test]
fn votes_are_opencvs_loop_exactly() {
    let mut rng = fastrand::Rng::with_seed(6);
    let axes = [
        HoughParams::default(),
        HoughParams { theta_min: -90.0, theta_max: 90.0, theta_step: 0.5, rho_step: 0.7 },
        HoughParams { theta_min: 10.0, theta_max: 370.0, theta_step: 0.37, rho_step: 1.3 },
        HoughParams { theta_min: 45.0, theta_max: 45.0, theta_step: 1.0, rho_step: 0.25 },
        // Over MAGIC_MAX_RHOS columns: the plain rounding.
        HoughParams { theta_min: 0.0, theta_max: 2.0, theta_step: 1.0, rho_step: 2e-5 },
    ];
    for (k, params) in axes.into_iter().enumerate() {
        let (w, h) = if k == 4 { (13, 9) } else { (300 + rng.usize(..300), 1 + rng.usize(..200)) };
        let density = [0.02, 0.5, 1.0][k % 3];
        let px: Vec<u16> =
            (0..w * h).map(|_| if rng.f64() < density { 1 + rng.u16(..1000) } else { 0 }).collect();
        let wide = Frame::new(w, h, 1000, Pixels::U16(px.clone().into()));
        let narrow = Frame::new(w, h, 255, Pixels::U8(px.iter().map(|&v| v.min(255) as u8).collect()));
        let space = HoughSpace::new(params, w, h).unwrap();
        assert_eq!(space.rhos > MAGIC_MAX_RHOS, k == 4);
        for frame in [wide, narrow] {
            assert!(
                HoughVote::votes_cpu(&space, &frame).unwrap() == reference_votes(&space, &frame),
                "{params:?}"
            );
        }
    }
}

/// Split over any number of threads, the votes and the lines are the one thread's.
#[test]
fn every_split_votes_as_one_thread() {
    let mut rng = fastrand::Rng::with_seed(31);
    let axes = [
        HoughParams::default(),
        HoughParams { theta_min: -90.0, theta_max: 90.0, theta_step: 7.5, rho_step: 0.7 },
        // Over MAGIC_MAX_RHOS columns: the plain rounding.
        HoughParams { theta_min: 0.0, theta_max: 2.0, theta_step: 1.0, rho_step: 2e-5 },
    ];
    for (w, h) in crate::parallel::testing::sizes(&mut rng) {
        for (k, params) in axes.into_iter().enumerate() {
            if k == 2 && w * h > 400 {
                continue;
            }
            let density = rng.f64();
            let px: Vec<u8> = (0..w * h).map(|_| if rng.f64() < density { 255 } else { 0 }).collect();
            let f = Frame::new(w, h, 255, Pixels::U8(px.into()));
            let vote = HoughVote { params, strategy: Strategy::Auto };
            let what = format!("{w}x{h} {params:?}");
            crate::parallel::testing::same_on_each_pool(&what, || {
                let acc = vote.cpu(&f).unwrap();
                let lines = HoughLines { threshold: 2, top: None }.cpu(&acc).unwrap();
                (acc, lines)
            });
        }
    }
}

#[test]
fn coarse_rho_steps_are_refused() {
    let p = HoughParams { rho_step: 1000.0, ..Default::default() };
    assert!(HoughSpace::new(p, 512, 512).unwrap_err().to_string().contains("too coarse"));
}
