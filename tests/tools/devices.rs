//! `--device`: a list of GPUs (or `all`) the frames of a stream are dealt to, one worker per GPU
//! queue, the output in the input's order and identical to one GPU's and the CPU's. A device may
//! be listed twice (two contexts on one GPU), so a machine with one GPU tests the dealing too.

use crate::common::*;
use histopipe_frame::{Format, Frame, Pixels};

/// A stream of frames that differ, so a frame out of place shows.
fn many_frames() -> Vec<u8> {
    let mut rng = rng();
    let camera = fixture_frame("camera.pgm");
    let mut frames: Vec<_> = (0..24).map(|i| random_frame(&mut rng, 300 + 7 * i, 200 + 3 * i, 255)).collect();
    frames.insert(5, camera.clone());
    frames.push(camera);
    stream(&frames)
}

#[test]
fn device_lists_are_checked_before_any_input() {
    for bad in ["", "x", "0,", "0,,1", "-1", "1.5", "al"] {
        let e = run_err("equalize", &["--device", bad], b"", 2);
        assert!(e.contains("--device") && e.contains("bad device"), "{bad:?}: {e}");
    }
    let many = vec!["0"; 65].join(",");
    let e = run_err("pad", &["--device", &many], b"", 2);
    assert!(e.contains("65 devices listed"), "{e}");
    // Lists and `all` are accepted; the CPU backend never touches them.
    let input = stream(&[fixture_frame("camera.pgm")]);
    let one = run_ok("equalize", "cpu", &[], &input);
    for good in ["0", "1,0", "0,0,3", "all", " 1 , 2 "] {
        assert_eq!(run_ok("equalize", "cpu", &["--device", good], &input), one, "--device {good}");
    }
}

#[test]
fn auto_on_gpus_that_cannot_be_used_is_the_cpu() {
    if histopipe_gpu::device_count() > 0 {
        return; // the no-GPU machine's case
    }
    let input = many_frames();
    let cpu = run_ok("rotate", "cpu", &["30"], &input);
    for devices in ["0,1", "all", "5"] {
        assert!(run_ok("rotate", "auto", &["30", "--device", devices], &input) == cpu, "--device {devices}");
    }
    let e = run_err("rotate", &["30", "--backend", "gpu", "--device", "all"], &input, 1);
    assert!(e.contains("no usable CUDA device") || e.contains("no CUDA"), "{e}");
}

#[test]
fn frames_dealt_to_several_gpus_come_out_in_order_and_equal() {
    let Some(_gpu) = gpu() else { return };
    let input = many_frames();
    let count = histopipe_gpu::device_count();
    let lists = [
        "0,0".to_string(),
        "all".to_string(),
        (0..count).map(|d| d.to_string()).collect::<Vec<_>>().join(","),
    ];
    for (tool, args) in [
        ("equalize", &[][..]),
        ("rotate", &["-33", "--bilinear"][..]),
        ("colhist", &[][..]),
        ("clahe", &[][..]),
    ] {
        let cpu = run_ok(tool, "cpu", args, &input);
        for devices in &lists {
            let args = [args, &["--device", devices]].concat();
            let out = run_ok(tool, "gpu", &args, &input);
            assert!(out == cpu, "{tool} {args:?} --backend gpu: differs from the CPU");
            let out = auto_from_the_start(tool, &args, &input);
            assert!(out == cpu, "{tool} {args:?} --backend auto: differs from the CPU");
        }
    }
    let edges = run_ok("edges", "cpu", &[], &input);
    let votes = run_ok("hough-vote", "cpu", &[], &edges);
    assert!(run_ok("hough-vote", "gpu", &["--device", "0,0"], &edges) == votes);
}

#[test]
fn a_gpu_that_cannot_be_used_fails_the_run_before_any_output() {
    let Some(_gpu) = gpu() else { return };
    let missing = histopipe_gpu::device_count();
    let input = many_frames();
    let out = tool("equalize")
        .args(["--backend", "gpu", "--device", &format!("0,{missing}")])
        .write_stdin(input.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "no frame written");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains(&format!("no CUDA device {missing}")) && e.contains("frame 1"), "{e}");
    // With auto, the GPUs that open take frames and the output is whole.
    let cpu = run_ok("equalize", "cpu", &[], &input);
    assert!(auto_from_the_start("equalize", &["--device", &format!("{missing},0")], &input) == cpu);
}

/// `auto` opening the GPUs at the second frame (`HISTOPIPE_GPU_AFTER=0`), so that a short stream
/// goes through them too.
fn auto_from_the_start(name: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let out = tool(name)
        .env("HISTOPIPE_GPU_AFTER", "0")
        .args(["--backend", "auto", "--progress"])
        .args(args)
        .write_stdin(input.to_vec())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name} {args:?} --backend auto failed: {stderr}");
    assert!(stderr.contains("operations run on cpu"), "{stderr}");
    // `all` counts the devices on a thread of its own, which a short stream may outrun.
    if !args.contains(&"all") {
        assert!(stderr.contains("GPU "), "the GPUs were opened: {stderr}");
    }
    out.stdout
}

#[test]
fn the_wait_before_auto_opens_a_gpu_is_checked() {
    for bad in ["x", "-1", "inf", "NaN", "2e6"] {
        let out = tool("pad").env("HISTOPIPE_GPU_AFTER", bad).write_stdin(Vec::new()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains("HISTOPIPE_GPU_AFTER: bad value"), "{bad}: {e}");
    }
    let input = stream(&[fixture_frame("camera.pgm"), fixture_frame("moon.pgm")]);
    let cpu = run_ok("equalize", "cpu", &[], &input);
    for good in ["0", "0.5", "3"] {
        let out =
            tool("equalize").env("HISTOPIPE_GPU_AFTER", good).write_stdin(input.clone()).output().unwrap();
        assert!(out.status.success() && out.stdout == cpu, "{good}");
    }
}

/// `auto` on frames that keep the cores busy a while: once a GPU is open it takes most of them,
/// also while its first frames (which compile or load the kernels) are being measured. Before,
/// the frames held back for the GPU all went to the cores the moment it opened, unmeasured: 32
/// dense 7680x4320 edge maps took `hough-vote --backend auto` 35 s on the cores, against 2 s on
/// the GPU (H100 machine).
#[test]
fn auto_gives_slow_frames_to_the_gpu_once_it_is_open() {
    let Some(_gpu) = gpu() else { return };
    let mut rng = rng();
    // A quarter of the pixels set, voting at 1800 angles: about a billion votes a frame, a tenth
    // of a second or more on all the cores, milliseconds on the GPU; 2 Mpx, so "large" before the
    // cores are measured. A coarse rho keeps the accumulators small.
    let frames: Vec<Frame> = (0..32)
        .map(|_| {
            let samples: Vec<u8> = (0..2048 * 1024).map(|_| if rng.u8(..) < 64 { 255 } else { 0 }).collect();
            let mut f = Frame::new(2048, 1024, 255, Pixels::U8(samples.into()));
            f.format = Format::Pgm;
            f
        })
        .collect();
    // The kernels compiled and cached first: on a machine that has never run them, compiling
    // takes the GPU's first frame seconds, which the cores spend on frames as they should.
    run_ok("hough-vote", "gpu", &["--theta-step", "0.1", "--rho-step", "16"], &stream(&frames[..1]));
    let out = tool("hough-vote")
        .env("HISTOPIPE_GPU_AFTER", "0")
        .args(["--backend", "auto", "--progress", "--theta-step", "0.1", "--rho-step", "16"])
        .write_stdin(stream(&frames))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(read_frames(&out.stdout).len(), frames.len());
    // "hough-vote: operations run on cpu C, GPU 0 G"
    let tally = stderr.lines().find_map(|l| l.split("operations run on ").nth(1)).unwrap_or_default();
    let on_gpu: usize =
        tally.split(", ").filter_map(|part| part.strip_prefix("GPU 0 ")?.parse::<usize>().ok()).sum();
    assert!(on_gpu >= frames.len() / 2, "the GPU took too few of the slow frames: {tally}");
}

/// A tool run from `PREFIX/bin` finds its kernels in `PREFIX/share/histopipe/kernels`, the
/// install's cache that `scripts/install` fills with `histopipe-kernels`, and compiles none: its
/// user's own cache stays empty, and its output is the CPU's.
#[test]
fn kernels_come_from_the_install_s_cache() {
    use histopipe_gpu::{cache, kernels::SOURCES, nvrtc};
    let Some(gpu) = gpu() else { return };
    let dir = temp_dir("installed-kernels");
    let bin = dir.join("prefix/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(assert_cmd::cargo::cargo_bin("rotate"), bin.join("rotate")).unwrap();
    let kernels = dir.join("prefix/share/histopipe/kernels");
    let version = nvrtc::version().unwrap();
    for source in SOURCES {
        let cubin = nvrtc::compile(source, gpu.arch()).unwrap();
        cache::store(&kernels.join(cache::file_name(source, gpu.arch(), version)), &cubin);
    }
    let user_cache = dir.join("user-cache");
    std::fs::create_dir_all(&user_cache).unwrap();
    let input = fixture_bytes("camera.pgm");
    let out = std::process::Command::new(bin.join("rotate"))
        .args(["30", "--bilinear", "--backend", "gpu"])
        .env("XDG_CACHE_HOME", &user_cache)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(&input)?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(files_under(&user_cache), Vec::<std::path::PathBuf>::new(), "nothing compiled");
    assert!(out.stdout == run_ok("rotate", "cpu", &["30", "--bilinear"], &input), "the CPU's bytes");
}
