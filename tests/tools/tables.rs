//! Every table a tool writes loads with `pandas.read_csv(path)` as it is: one header per file,
//! the same `frame` and `source` columns first, the same names across tools.

use std::process::Command as StdCommand;

use crate::common::*;

/// Loads `path` with pandas (tab-separated for `.tsv`) and returns, one per line: the column
/// names, the shape, the distinct frames and the distinct sources.
fn pandas(path: &std::path::Path) -> Vec<String> {
    let python = std::env::var("HISTOPIPE_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "import sys\n\
        try:\n    import pandas as pd\nexcept ImportError as e:\n    sys.exit(f'pandas: {e}: run scripts/test')\n\
        p = sys.argv[1]\n\
        d = pd.read_csv(p, sep='\\t') if p.endswith('.tsv') else pd.read_csv(p)\n\
        print(','.join(map(str, d.columns[:6])))\n\
        print(d.shape[0], d.shape[1])\n\
        print(' '.join(map(str, d['frame'].unique())))\n\
        print(' '.join(map(str, d['source'].unique())))\n";
    let out = StdCommand::new(&python).arg("-c").arg(script).arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "pandas cannot load {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn every_table_loads_with_pandas() {
    let dir = temp_dir("tables");
    for name in ["camera.pgm", "coins.pgm"] {
        std::fs::copy(fixture(name), dir.join(name)).unwrap();
    }
    let run = |name: &str, args: &[&str], input: Option<&[u8]>| {
        let mut cmd = tool(name);
        cmd.current_dir(&dir).args(["--backend", "cpu"]).args(args);
        let out = match input {
            Some(bytes) => cmd.write_stdin(bytes.to_vec()).output().unwrap(),
            None => cmd.output().unwrap(),
        };
        assert!(out.status.success(), "{name} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let files = ["camera.pgm", "coins.pgm"];
    for ext in ["csv", "tsv"] {
        let cdf = format!("cdf.{ext}");
        run("cdf", &["--bins", "4", "-o", &cdf, files[0], files[1]], None);
        let t = pandas(&dir.join(&cdf));
        assert_eq!(t, ["frame,source,bin,lower,upper,count", "8 8", "1 2", "camera.pgm coins.pgm"], "{cdf}");

        // colhist of two frames of one size, through a pipeline: the sources travel with them.
        let turned = run("rotate", &["30", files[0], files[0]], None);
        let colhist = format!("colhist.{ext}");
        run("colhist", &["--bins", "8", "-o", &colhist], Some(&turned));
        let t = pandas(&dir.join(&colhist));
        assert_eq!(t[0], "frame,source,bin,lower,upper,0", "{colhist}");
        assert_eq!(t[1], format!("16 {}", 5 + 512), "{colhist}: 8 bins a frame, 5 + 512 columns");
        assert_eq!(t[2..], ["1 2", "camera.pgm"], "{colhist}");

        let edges = run("edges", &[files[0], files[1]], None);
        let votes = run("hough-vote", &[], Some(&edges));
        let lines = format!("lines.{ext}");
        run("hough-lines", &["--top", "3", "-o", &lines], Some(&votes));
        let t = pandas(&dir.join(&lines));
        assert_eq!(t, ["frame,source,rho,theta,theta_degrees,votes", "6 6", "1 2", "camera.pgm coins.pgm"]);
    }
    // From standard input the source is '-', a string pandas keeps.
    let out = run("cdf", &["--bins", "2"], Some(&fixture_bytes("camera.pgm")));
    std::fs::write(dir.join("stdin.csv"), out).unwrap();
    assert_eq!(pandas(&dir.join("stdin.csv"))[3], "-");
}
