//! The CPU backend's threads (`--threads`, `HISTOPIPE_THREADS`), through every tool: any number
//! gives the same output.

use histopipe_frame::{Frame, Pixels};

use crate::common::*;

/// Runs `name args` on the CPU with `threads` (`None`: the default) and, if `env`, the count given
/// through `HISTOPIPE_THREADS` instead; asserts success; returns stdout.
fn run_threads(name: &str, args: &[&str], input: &[u8], threads: Option<&str>, env: bool) -> Vec<u8> {
    let mut cmd = tool(name);
    cmd.args(["--backend", "cpu"]).args(args);
    match (threads, env) {
        (Some(n), true) => cmd.env("HISTOPIPE_THREADS", n),
        (Some(n), false) => cmd.args(["--threads", n]),
        (None, _) => &mut cmd,
    };
    let out = cmd.write_stdin(input.to_vec()).output().unwrap();
    assert!(out.status.success(), "{name} {args:?} {threads:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// A frame of rings (long edges across many bands of rows) with noise, `maxval` 255 or more.
fn rings(rng: &mut fastrand::Rng, w: usize, h: usize, maxval: u16) -> Frame {
    let mut level = |i: usize| {
        let (x, y) = ((i % w) as f64 - w as f64 / 3.0, (i / w) as f64 - h as f64 / 2.0);
        let v = 0.5 + 0.4 * ((x * x + y * y).sqrt() / 15.0).sin() + 0.05 * rng.f64();
        (v * maxval as f64) as u16
    };
    let pixels = if maxval <= 255 {
        Pixels::U8((0..w * h).map(|i| level(i) as u8).collect())
    } else {
        Pixels::U16((0..w * h).map(&mut level).collect())
    };
    Frame::new(w, h, maxval, pixels)
}

/// Every operation's input large enough to be split (the thresholds are a few hundred thousand
/// to a few million samples: see each operation's MIN_PART).
#[test]
fn every_tool_gives_the_same_output_on_any_number_of_threads() {
    let mut rng = rng();
    let eight = stream(&[rings(&mut rng, 1001, 703, 255)]);
    let big8 = stream(&[rings(&mut rng, 2100, 2000, 255)]);
    let big16 = stream(&[rings(&mut rng, 2000, 2100, 4000)]);
    let edges = run_threads("edges", &["--low", "20", "--high", "60"], &eight, Some("1"), false);
    let accumulator = run_threads("hough-vote", &[], &edges, Some("1"), false);
    let cases: [(&str, &[&str], &[u8]); 12] = [
        ("pad", &["--border", "1000"], &eight),
        ("pad", &["--to", "2900x2900", "--fill", "9"], &big16),
        ("rotate", &["30"], &eight),
        ("rotate", &["-100", "--bilinear"], &big16),
        ("colhist", &[], &big8),
        ("colhist", &["--rows"], &big16),
        ("cdf", &[], &big16),
        ("equalize", &[], &big8),
        ("edges", &["--low", "20", "--high", "60"], &eight),
        ("edges", &["--low", "20", "--high", "60", "--blur", "1"], &eight),
        ("hough-vote", &[], &edges),
        ("hough-lines", &["--threshold", "40"], &accumulator),
    ];
    for (name, args, input) in cases {
        let one = run_threads(name, args, input, Some("1"), false);
        assert!(one.len() > 100, "{name} {args:?}: no output to compare");
        for (threads, env) in [(Some("3"), false), (Some("2"), true), (None, false)] {
            let other = run_threads(name, args, input, threads, env);
            assert!(other == one, "{name} {args:?}: {threads:?} threads (env {env}) differ from one");
        }
    }
    let lines =
        String::from_utf8(run_threads("hough-lines", &["--threshold", "40"], &accumulator, None, false));
    assert!(lines.unwrap().lines().count() > 2, "the rings' edges make lines");
}

#[test]
fn bad_thread_counts_are_usage_errors() {
    let good = b"P5 1 1 255\n\x00";
    for bad in ["0", "-1", "two", ""] {
        assert!(run_err("pad", &["--threads", bad], good, 2).contains("--threads"), "{bad}");
    }
    for bad in ["0", "x"] {
        let out = tool("pad").env("HISTOPIPE_THREADS", bad).write_stdin(good.to_vec()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "HISTOPIPE_THREADS={bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("HISTOPIPE_THREADS"));
    }
    // Unset or empty: the default.
    let out = tool("pad").env("HISTOPIPE_THREADS", "").write_stdin(good.to_vec()).output().unwrap();
    assert!(out.status.success());
}
