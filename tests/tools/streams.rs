//! Streams through the GPU backend. Once the GPU is open, frames are read into page-locked memory
//! that it lends, go to the device and back without a staging copy, and results come back into
//! lent memory too; blocks are handed back and reused from frame to frame. Every frame must still
//! be what the CPU backend makes of it.

use histopipe_frame::{Format, Frame, Pixels};

use crate::common::*;

/// A stream whose frame sizes change (so lent blocks are reused, outgrown and handed back), of
/// real and random content; 16-bit frames too when `wide`.
fn varied_frames(rng: &mut fastrand::Rng, wide: bool) -> Vec<Frame> {
    let camera = fixture_frame("camera.pgm");
    let mut frames = vec![camera.clone(), random_frame(rng, 640, 480, 255), camera.clone()];
    for (w, h) in [(333, 517), (1200, 7), (1, 1), (2048, 1536), (640, 480)] {
        frames.push(random_frame(rng, w, h, 255));
    }
    frames.push(camera);
    if wide {
        frames.insert(4, random_frame(rng, 517, 333, 1000));
        frames.push(fixture_frame("dem16.pgm"));
        frames.push(random_frame(rng, 640, 480, 65535));
    }
    frames
}

fn same_on_both_backends(tool: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let cpu = run_ok(tool, "cpu", args, input);
    let gpu = run_ok(tool, "gpu", args, input);
    assert!(cpu == gpu, "{tool} {args:?}: the GPU stream differs from the CPU stream");
    cpu
}

#[test]
fn gpu_streams_equal_cpu_streams_frame_for_frame() {
    let Some(_gpu) = gpu() else { return };
    let mut rng = rng();
    let wide = stream(&varied_frames(&mut rng, true));
    for (tool, args) in [
        ("pad", &[][..]),
        ("rotate", &["30"][..]),
        ("rotate", &["-71.5", "--bilinear", "--fill", "200"][..]),
        ("colhist", &[][..]),
        ("colhist", &["--format", "pgm"][..]),
        ("cdf", &[][..]),
        ("equalize", &[][..]),
        ("clahe", &[][..]),
        ("clahe", &["--clip", "2", "--tiles", "3x5"][..]),
    ] {
        same_on_both_backends(tool, args, &wide);
    }
    let narrow = stream(&varied_frames(&mut rng, false));
    let edges = same_on_both_backends("edges", &[], &narrow);
    let votes = same_on_both_backends("hough-vote", &[], &edges);
    same_on_both_backends("hough-lines", &["--threshold", "100"], &votes);
    // Raw 16-bit samples are little-endian: converted in place in the lent block.
    let raw: Vec<u8> = (0..5 * 300 * 200).flat_map(|_| rng.u16(..).to_le_bytes()).collect();
    same_on_both_backends("pad", &["--raw", "300x200:16", "--border", "3"], &raw);
    same_on_both_backends("equalize", &["--raw", "300x200:16"], &raw);
    same_on_both_backends("clahe", &["--raw", "300x200:16"], &raw);
}

/// A GPU that runs out of memory in the middle of a stream: exit status 1, one line naming the
/// frame, and every frame before it written. The test takes nearly all of the GPU's free memory
/// itself, leaving the tool enough for its context and small frames but not for frame 2.
#[test]
fn running_out_of_gpu_memory_mid_stream_stops_at_that_frame() {
    use histopipe_gpu::cudarc::driver::result::mem_get_info;
    let Some(gpu) = gpu_alone() else { return };
    // The tool's own context, kernels and pooled buffers for the small frames fit in this.
    const LEFT: usize = 1536 << 20;
    gpu.context().bind_to_thread().unwrap();
    let (free, _) = mem_get_info().unwrap();
    let hog = gpu.stream().alloc_zeros::<u8>(free.saturating_sub(LEFT)).unwrap();
    gpu.synchronize().unwrap();
    let (free, _) = mem_get_info().unwrap();
    let mut rng = rng();
    let small = [random_frame(&mut rng, 64, 48, 255), random_frame(&mut rng, 33, 7, 255)];
    // Twice what was left: its upload alone cannot be allocated.
    let (w, h) = (65536, (2 * free).div_ceil(65536));
    let mut big = Frame::new(w, h, 255, Pixels::U8(vec![7u8; w * h].into()));
    big.format = Format::Pgm;
    let input = stream(&[small[0].clone(), big, small[1].clone()]);
    let out = tool("equalize")
        .args(["--backend", "gpu", "--max-pixels", &(w * h).to_string()])
        .write_stdin(input)
        .output()
        .unwrap();
    drop(hog);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr}");
    assert!(stderr.starts_with("equalize: frame 2: ") && stderr.contains("memory"), "{stderr}");
    assert!(
        out.stdout == run_ok("equalize", "cpu", &[], &stream(&small[..1])),
        "the output is not exactly the first frame equalized"
    );
}
