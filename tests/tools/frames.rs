//! Every input form and every input error, through `pad` (the frame code is shared by all tools).

use std::io::{Read, Write};
use std::process::{Command as StdCommand, Stdio};

use histopipe_frame::{Channels, Depth, Format, Frame, Pixels, RawSpec, ReadOptions};

use crate::common::*;

/// `pad --border 0` changes nothing but the geometry: the identity filter for format tests.
fn identity(input: &[u8], extra: &[&str]) -> Vec<u8> {
    let mut args = vec!["--border", "0"];
    args.extend_from_slice(extra);
    run_ok("pad", "cpu", &args, input)
}

#[test]
fn pgm_8_and_16_bit_plain_and_pam_come_back_in_their_container() {
    let camera = fixture_frame("camera.pgm");
    let dem = fixture_frame("dem16.pgm");
    assert_eq!((dem.maxval, dem.depth()), (1076, Depth::U16));
    for mut f in [camera, dem] {
        for format in [Format::Pgm, Format::PlainPgm, Format::Pam] {
            f.format = format;
            let out = identity(&stream(std::slice::from_ref(&f)), &[]);
            let magic = match format {
                Format::Pgm => "P5",
                Format::PlainPgm => "P2",
                _ => "P7",
            };
            assert!(out.starts_with(magic.as_bytes()), "{format:?}");
            let back = read_frames(&out).remove(0);
            assert_eq!((back.pixels, back.maxval, back.format), (f.pixels.clone(), f.maxval, format));
        }
    }
}

#[test]
fn colour_stays_colour_and_gray_reads_are_opencvs_luma() {
    // camera.png is the same picture as camera.pgm.
    let png = read_frames(&identity(&fixture_bytes("camera.png"), &[])).remove(0);
    assert_eq!(png.pixels, fixture_frame("camera.pgm").pixels);
    let astronaut = image::open(fixture("astronaut.png")).unwrap().to_rgb8();
    let rgb = Pixels::U8(astronaut.as_raw().clone().into());
    let mut luma = vec![0u8; astronaut.as_raw().len() / 3];
    histopipe_frame::colour::gray_u8(astronaut.as_raw(), 3, &mut luma);
    let gray = ReadOptions { gray: true, ..ReadOptions::default() };
    let out = identity(&fixture_bytes("astronaut.png"), &[]);
    assert!(out.starts_with(b"P6"), "colour PNG in, PPM out");
    let back = read_frames(&out).remove(0);
    assert_eq!((back.channels, &back.pixels), (Channels::Rgb, &rgb));
    assert_eq!(read_frames_with(&out, gray).remove(0).pixels, Pixels::U8(luma.clone().into()));
    // The same picture as PPM, TIFF and BMP.
    let (w, h) = astronaut.dimensions();
    let mut ppm = format!("P6\n{w} {h}\n255\n").into_bytes();
    ppm.extend_from_slice(astronaut.as_raw());
    for (format, bytes) in [
        ("ppm", ppm),
        ("tiff", encode(&astronaut, image::ImageFormat::Tiff)),
        ("bmp", encode(&astronaut, image::ImageFormat::Bmp)),
    ] {
        let f = read_frames(&identity(&bytes, &[])).remove(0);
        assert_eq!((f.channels, &f.pixels), (Channels::Rgb, &rgb), "{format}");
        assert_eq!(
            read_frames_with(&bytes, gray).remove(0).pixels,
            Pixels::U8(luma.clone().into()),
            "{format}"
        );
    }
    let jpeg = read_frames(&identity(&fixture_bytes("rocket.jpg"), &[])).remove(0);
    assert_eq!((jpeg.width, jpeg.height, jpeg.channels), (640, 427, Channels::Rgb));
}

fn encode(img: &image::RgbImage, format: image::ImageFormat) -> Vec<u8> {
    let mut bytes = std::io::Cursor::new(Vec::new());
    img.write_to(&mut bytes, format).unwrap();
    bytes.into_inner()
}

#[test]
fn png_output_of_one_frame_and_refusal_of_two() {
    let camera = fixture_bytes("camera.pgm");
    let out = identity(&camera, &["--png"]);
    let decoded = image::load_from_memory(&out).unwrap().to_luma8();
    assert_eq!(Pixels::U8(decoded.into_raw().into()), fixture_frame("camera.pgm").pixels);
    let two = [camera.clone(), camera].concat();
    let e = run_err("pad", &["--png"], &two, 2);
    assert!(e.contains("frame 2") && e.contains("--png"), "{e}");
}

#[test]
fn raw_8_and_16_bit_streams() {
    let mut rng = rng();
    let frames: Vec<Frame> = (0..3).map(|_| random_frame(&mut rng, 17, 5, 255)).collect();
    let bytes: Vec<u8> = frames
        .iter()
        .flat_map(|f| match &f.pixels {
            Pixels::U8(v) => v.to_vec(),
            _ => unreachable!(),
        })
        .collect();
    let out = identity(&bytes, &["--raw", "17x5"]);
    assert_eq!(out, bytes, "raw in, raw out, unchanged");
    let wide: Vec<u16> = (0..17 * 5 * 2).map(|_| rng.u16(..)).collect();
    let bytes16: Vec<u8> = wide.iter().flat_map(|v| v.to_le_bytes()).collect();
    let out = identity(&bytes16, &["--raw", "17x5:16"]);
    assert_eq!(out, bytes16);
    let spec = RawSpec { width: 17, height: 5, depth: Depth::U16 };
    assert_eq!(read_frames_with(&out, ReadOptions { raw: Some(spec), ..Default::default() }).len(), 2);
}

#[test]
fn a_stream_of_mixed_frames_is_handled_in_order() {
    let mut rng = rng();
    let mut frames = vec![
        random_frame(&mut rng, 3, 7, 255),
        random_frame(&mut rng, 8, 1, 40000),
        fixture_frame("coins.pgm"),
    ];
    frames[1].format = Format::PlainPgm;
    let out = read_frames(&run_ok("pad", "cpu", &[], &stream(&frames)));
    assert_eq!(out.len(), 3);
    for (o, f) in out.iter().zip(&frames) {
        let d = ((f.width * f.width + f.height * f.height) as f64).sqrt().ceil() as usize;
        assert_eq!((o.width, o.height, o.maxval, o.format), (d, d, f.maxval, f.format));
    }
}

#[test]
fn bad_input_gets_one_line_naming_the_frame() {
    let good = b"P5 2 2 255\n\x01\x02\x03\x04".to_vec();
    let cases: Vec<(Vec<u8>, &[&str], &str)> = vec![
        (vec![], &[], "frame 1: empty input"),
        (b"GIF89a".to_vec(), &[], "frame 1: unrecognized input"),
        (b"P5 2".to_vec(), &[], "frame 1: truncated header"),
        (b"P5 2 2 255\n\x01".to_vec(), &[], "frame 1: truncated pixel data"),
        ([good.clone(), b"P5 2 2 255\n\x01".to_vec()].concat(), &[], "frame 2: truncated pixel data"),
        ([good.clone(), good.clone(), b"P5 2 ".to_vec()].concat(), &[], "frame 3: truncated header"),
        (b"P5 2 2 0\n\x00\x00\x00\x00".to_vec(), &[], "frame 1: maxval is 0"),
        (b"P5 2 2 65536\n".to_vec(), &[], "frame 1: maxval 65536 is too large"),
        (b"P5 0 2 255\n".to_vec(), &[], "frame 1: width is 0"),
        (b"P5 2 0 255\n".to_vec(), &[], "frame 1: height is 0"),
        (b"P5 2z 2 255\n".to_vec(), &[], "frame 1: bad width '2z'"),
        (b"P5 2 2 2-55\n".to_vec(), &[], "frame 1: bad maxval '2-55'"),
        (b"P5 99999999999 2 255\n".to_vec(), &[], "frame 1: width 99999999999 is too large"),
        (b"P5 4000000000 4000000000 255\n".to_vec(), &[], "over the limit"),
        (good.clone(), &["--max-pixels", "3"], "frame 1: 2x2 is 4 pixels, over the limit of 3"),
        (vec![0; 7], &["--raw", "2x2"], "frame 2: raw stream ends 3 bytes into a frame of 4 bytes"),
        (b"P5 2 2 9\n\x01\x02\x03\x0a".to_vec(), &[], "frame 1: sample 3 is 10, over maxval 9"),
    ];
    for (input, args, expected) in cases {
        let e = run_err("pad", args, &input, 2);
        assert!(e.contains(expected), "expected '{expected}' in: {e}");
    }
}

#[test]
fn every_jpeg_and_tiff_of_a_stream_is_a_frame() {
    let rocket = fixture_bytes("rocket.jpg");
    let camera = fixture_bytes("camera.pgm");
    let tiff = encode(&image::open(fixture("astronaut.png")).unwrap().to_rgb8(), image::ImageFormat::Tiff);
    let cases: [(Vec<u8>, usize); 4] = [
        ([rocket.clone(), rocket.clone(), rocket.clone()].concat(), 3),
        ([camera.clone(), rocket.clone(), camera.clone()].concat(), 3),
        ([tiff.clone(), camera.clone(), tiff].concat(), 3),
        ([rocket.clone(), b"\n".to_vec(), rocket].concat(), 2),
    ];
    for (input, n) in cases {
        let out = run_ok("equalize", "cpu", &[], &input);
        assert_eq!(read_frames(&out).len(), n);
    }
}

#[test]
fn hostile_images_are_refused_with_one_line() {
    let rocket = fixture_bytes("rocket.jpg");
    // rocket.jpg declaring 32768x32768: refused from its header ("cannot hold": the data is too
    // short for the size), not decoded for seconds.
    let mut bomb = rocket.clone();
    let sof = bomb.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
    bomb[sof + 5..sof + 9].copy_from_slice(&[0x80, 0, 0x80, 0]);
    assert!(run_err("cdf", &[], &bomb, 2).contains("cannot hold"));
    let half = &rocket[..rocket.len() / 2];
    assert!(run_err("cdf", &[], half, 2).contains("frame 1: truncated JPEG"));
    assert!(run_err("cdf", &[], b"\xff\xd8", 2).contains("truncated JPEG"));
    // A TIFF whose width is text: the tiff crate would print a debug line for long text.
    let mut text_width = b"II*\0\x08\0\0\0\x01\0\x00\x01\x02\0\0\x01\0\0\x1a\0\0\0\0\0\0\0".to_vec();
    text_width.extend_from_slice(&[b'9'; 256]);
    assert!(run_err("cdf", &[], &text_width, 2).contains("tag 256 holds text"));
    // A 1x1 TIFF with a long XMP packet as text, which the tiff crate's debug line was about.
    let mut xmp = b"II*\0\x08\0\0\0".to_vec();
    let entries: [(u16, u16, u32, u32); 9] = [
        (256, 4, 1, 1),
        (257, 4, 1, 1),
        (258, 3, 1, 8),
        (259, 3, 1, 1),
        (262, 3, 1, 1),
        (273, 4, 1, 122),
        (278, 4, 1, 1),
        (279, 4, 1, 1),
        (700, 2, 300, 123),
    ];
    xmp.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    for (tag, kind, count, value) in entries {
        for field in [&tag.to_le_bytes()[..], &kind.to_le_bytes(), &count.to_le_bytes(), &value.to_le_bytes()]
        {
            xmp.extend_from_slice(field);
        }
    }
    xmp.extend_from_slice(&[0, 0, 0, 0, 77]);
    xmp.extend_from_slice(&[b'x'; 300]);
    let out = tool("pad").args(["--backend", "cpu", "--border", "0"]).write_stdin(xmp).output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let frame = read_frames(&out.stdout).remove(0);
    assert_eq!(
        (frame.width, frame.height, frame.pixels),
        (1, 1, histopipe_frame::Pixels::U8(vec![77].into()))
    );
    let after = [rocket, b"\x00\x01".to_vec()].concat();
    assert!(run_err("pad", &[], &after, 2)
        .contains(r"frame 2: unrecognized input starting '\x00\x01' after the JPEG image of frame 1"));
}

#[test]
fn usage_errors_name_the_option() {
    let good = b"P5 1 1 255\n\x00";
    assert!(run_err("pad", &["--frobnicate"], good, 2).contains("'--frobnicate'"));
    assert!(run_err("pad", &["--fill", "1x"], good, 2).contains("--fill: bad value '1x'"));
    assert!(run_err("pad", &["--raw", "12"], good, 2).contains("--raw"));
    assert!(run_err("pad", &["--backend", "tpu"], good, 2).contains("unknown backend 'tpu'"));
    assert!(run_err("pad", &["--fill"], good, 2).contains("--fill"));
    assert!(run_err("pad", &["stray"], good, 2).contains("stray: no such file"));
    let out = tool("pad").env("HISTOPIPE_BACKEND", "quantum").write_stdin(good.to_vec()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HISTOPIPE_BACKEND"));
}

/// `HISTOPIPE_RAW` is every tool's `--raw`, so one export makes a whole pipeline of raw frames
/// work (`equalize --raw 320x240 < v.gray | edges` fails: edges cannot know the size).
#[test]
fn histopipe_raw_is_every_tools_raw() {
    let moon = fixture_frame("moon.pgm");
    let Pixels::U8(samples) = &moon.pixels else { panic!("moon.pgm is 8-bit") };
    let raw: Vec<u8> = [samples.as_ref(), samples.as_ref()].concat();
    let size = format!("{}x{}", moon.width, moon.height);
    let with_env = |name: &str, args: &[&str], input: Vec<u8>| {
        tool(name)
            .env("HISTOPIPE_RAW", &size)
            .args(["--backend", "cpu"])
            .args(args)
            .write_stdin(input)
            .output()
            .unwrap()
    };
    let equalized = with_env("equalize", &[], raw.clone());
    assert!(equalized.status.success(), "{}", String::from_utf8_lossy(&equalized.stderr));
    assert_eq!(equalized.stdout.len(), raw.len(), "raw out: two frames, samples only");
    let edges = with_env("edges", &[], equalized.stdout.clone());
    assert!(edges.status.success(), "{}", String::from_utf8_lossy(&edges.stderr));
    // The same as giving --raw to each tool.
    let by_option =
        run_ok("edges", "cpu", &["--raw", &size], &run_ok("equalize", "cpu", &["--raw", &size], &raw));
    assert!(edges.stdout == by_option);
    // Without it, the second tool cannot read the first's raw output.
    let e = run_err("edges", &[], &equalized.stdout, 2);
    assert!(e.contains("frame 1"), "{e}");
    // --raw none reads headers whatever the environment says; a bad value names the variable.
    let pgm = with_env("equalize", &["--raw", "none"], fixture_bytes("moon.pgm"));
    assert!(
        pgm.status.success() && pgm.stdout.starts_with(b"P5"),
        "{}",
        String::from_utf8_lossy(&pgm.stderr)
    );
    let out = tool("pad").env("HISTOPIPE_RAW", "12").write_stdin(raw).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HISTOPIPE_RAW: bad size '12'"));
}

#[test]
fn help_and_version() {
    for name in tools() {
        let help = tool(name).arg("--help").output().unwrap();
        assert!(help.status.success());
        let text = String::from_utf8_lossy(&help.stdout);
        assert!(
            text.starts_with(&format!("{name}: ")) && text.contains("Example") && text.contains("--backend"),
            "{text}"
        );
        assert!(text.contains(&format!("Usage: {name} ")) && text.contains("[OPTIONS] [FILE...]"), "{text}");
        assert!(text.contains("-o, --output PATH"), "{name}");
        let version = tool(name).arg("--version").output().unwrap();
        assert!(String::from_utf8_lossy(&version.stdout).starts_with(&format!("{name} (histopipe) ")));
    }
}

#[test]
fn a_closed_output_pipe_ends_quietly() {
    let mut rng = rng();
    let big = stream(&[random_frame(&mut rng, 4096, 4096, 255)]);
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("pad"))
        .args(["--backend", "cpu"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&big);
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(&first[..2], b"P5");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(out.status.code(), Some(0));
}

/// 100 frames of 3840x2160 pass through two workers with memory bounded by a few frames (measured as the
/// child's peak resident set by Python's getrusage, the one portable probe CI has).
#[test]
fn a_long_4k_stream_runs_in_bounded_memory() {
    let (w, h, n) = (3840usize, 2160usize, 100usize);
    let script = format!(
        r#"
import resource, subprocess, sys
frame = b"P5\n{w} {h}\n255\n" + bytes(range(256)) * ({w} * {h} // 256)
p = subprocess.Popen([sys.argv[1], "--backend", "cpu", "--border", "0", "--threads", "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
import threading
def feed():
    for _ in range({n}):
        p.stdin.write(frame)
    p.stdin.close()
t = threading.Thread(target=feed); t.start()
total = 0
while True:
    chunk = p.stdout.read(1 << 20)
    if not chunk:
        break
    total += len(chunk)
t.join(); p.wait()
print(p.returncode, total, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"#
    );
    let python = std::env::var("HISTOPIPE_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(python)
        .args(["-c", &script, assert_cmd::cargo::cargo_bin("pad").to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<u64> = text.split_whitespace().map(|f| f.parse().unwrap()).collect();
    assert_eq!(fields[0], 0, "pad failed: {}", String::from_utf8_lossy(&out.stderr));
    let frame_bytes = (w * h) as u64;
    assert!(fields[1] > n as u64 * frame_bytes, "output too short: {}", fields[1]);
    let peak = fields[2] * 1024;
    // The reader holds two frames, each of the two workers an input and an output, one more is
    // waiting for a worker and one being written: at most 12 of 100.
    assert!(peak < 12 * frame_bytes, "peak memory {peak} bytes is more than 12 frames of {frame_bytes}");
}
