//! scripts/install and scripts/uninstall: the tools this test binary was built with, and the GPU
//! service beside them, installed in a temporary PREFIX, their man pages read with `man -l` and
//! their bash completions loaded as a shell loads them, then taken away again, leaving what was
//! there before. Each page and each completion must have every option the tool defines (its option
//! table, `--help-flags`).
//!
//! `man` is required (CI installs man-db); HISTOPIPE_SKIP_MAN=1 skips the man pages' reading,
//! saying so, on a machine without it. zsh and fish completions are checked for syntax where
//! those shells are installed, and every option's words are completed by bash, zsh (driven on a
//! pseudo-terminal) and fish, a shell that is not installed skipped, saying so (CI installs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use crate::flags::defined;

/// Where cargo put the tools for these tests.
fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_cdf")).parent().expect("the binary is in a folder").to_path_buf()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `man -l` of `page`: its text, with nothing on stderr (groff warns there of what it cannot set).
fn man(page: &Path) -> Option<String> {
    // A minimized Ubuntu (the GPU machine's image) has a `man` that only says so.
    let found = Command::new("man").arg("--version").output().is_ok_and(|o| {
        o.status.success() && !String::from_utf8_lossy(&[o.stdout, o.stderr].concat()).contains("minimized")
    });
    if !found {
        if std::env::var("HISTOPIPE_SKIP_MAN").as_deref() == Ok("1") {
            histopipe_gpu::testing::skip("reading the man pages: no man, and HISTOPIPE_SKIP_MAN=1");
            return None;
        }
        panic!(
            "man is not installed, so the man pages cannot be read: install man-db and groff-base \
             (apt-get install man-db groff-base; .ci/run does), or set HISTOPIPE_SKIP_MAN=1"
        );
    }
    let out = run(Command::new("man").args(["-P", "cat", "-l"]).arg(page).env("MANWIDTH", "100"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // groff 1.22's tbl says this of a table that happens to straddle a page of its internal
    // layout, even when man renders the page continuously (no page breaks are shown): it depends
    // on where the table falls, not on the table.
    let stderr: Vec<&str> =
        stderr.lines().filter(|l| !l.contains("table text block will not fit on one page")).collect();
    assert!(stderr.concat().trim().is_empty(), "{}: {}", page.display(), stderr.join("\n"));
    Some(String::from_utf8(out.stdout).unwrap())
}

/// `words` completed by the bash completion `script` for `tool`: what COMPREPLY holds.
fn bash_complete(script: &Path, tool: &str, words: &[&str]) -> String {
    let function = format!("_histopipe_{}", tool.replace('-', "_"));
    let line = format!(
        "source '{}' && complete -p {tool} && COMP_WORDS=({}) && COMP_CWORD={} && {function} && \
         echo \"${{COMPREPLY[*]}}\"",
        script.display(),
        words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
        words.len() - 1
    );
    String::from_utf8(run(Command::new("bash").arg("-c").arg(line)).stdout).unwrap()
}

#[test]
fn install_then_uninstall() {
    let prefix = temp_dir("install");
    // Something of the user's already there: the uninstall must leave it.
    let theirs = prefix.join("share/man/man1/theirs.1");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, ".TH THEIRS 1\n").unwrap();
    let install = repo().join("scripts/install");
    run(Command::new(&install).arg("--bin-dir").arg(bin_dir()).arg(&prefix));

    for tool in tools() {
        let bin = prefix.join("bin").join(tool);
        let version = run(Command::new(&bin).arg("--version")).stdout;
        assert!(String::from_utf8_lossy(&version).starts_with(&format!("{tool} (histopipe) ")));
        if let Some(page) = man(&prefix.join(format!("share/man/man1/{tool}.1"))) {
            let header = format!("{}(1)", tool.to_uppercase());
            assert!(page.starts_with(&header), "{tool}: {}", &page[..page.len().min(200)]);
            for section in ["NAME", "SYNOPSIS", "ERRORS", "EXAMPLE"] {
                assert!(page.contains(&format!("\n{section}\n")), "{tool}: no {section}");
            }
            assert!(page.contains(&format!("\n       {tool} - ")), "{tool}: the NAME line");
            assert!(!page.contains("](") && !page.contains('`'), "{tool}: Markdown left over");
            // Every option the tool defines, its own and those every tool shares, at the start of
            // a line as --help lists it (`--bins N`, `-o, --output PATH`), in its section.
            let shared = page.find("\nOPTIONS EVERY TOOL SHARES\n").expect("the common options' section");
            for d in defined(tool) {
                let synopsis = d.synopsis();
                let at = page.lines().position(|l| {
                    let l = l.trim_start();
                    l == synopsis || l.starts_with(&format!("{synopsis} "))
                });
                assert!(at.is_some(), "{tool}: the man page does not list {synopsis}");
                let listed = page.find(&format!("\n       {synopsis}")).unwrap_or(0);
                let section = if d.own { "OPTIONS" } else { "OPTIONS EVERY TOOL SHARES" };
                assert_eq!(listed > shared, !d.own, "{tool}: {synopsis} is not under {section}");
            }
            if defined(tool).iter().any(|d| d.own) {
                assert!(page.contains("\nOPTIONS\n"), "{tool}: the tool's options");
            }
        }
        // Every option the tool defines, completed by each shell.
        let completions = |file: String| std::fs::read_to_string(prefix.join(file)).unwrap();
        let bash = completions(format!("share/bash-completion/completions/{tool}"));
        let zsh = completions(format!("share/zsh/site-functions/_{tool}"));
        let fish = completions(format!("share/fish/vendor_completions.d/{tool}.fish"));
        let bash_words: Vec<&str> = bash
            .lines()
            .find_map(|l| l.trim().strip_prefix("COMPREPLY=($(compgen -W \"").filter(|w| w.starts_with('-')))
            .map(|l| l.split('"').next().unwrap().split_whitespace().collect())
            .expect("bash: the option words");
        for d in defined(tool) {
            let long = &d.long;
            assert!(bash_words.contains(&long.as_str()), "{tool}: bash does not complete {long}");
            assert!(
                zsh.contains(&format!("'{long}[")) || zsh.contains(&format!(",{long}}}'[")),
                "{tool}: zsh does not complete {long}"
            );
            let fish_long = format!(" -l {} ", &long[2..]);
            assert!(
                fish.lines()
                    .any(|l| l.starts_with(&format!("complete -c {tool} ")) && l.contains(&fish_long)),
                "{tool}: fish does not complete {long}"
            );
        }
    }
    // The GPU service beside the tools, where they look for it, with its manual page.
    let service = run(Command::new(prefix.join("bin/histopipe-service")).arg("--help")).stdout;
    assert!(String::from_utf8_lossy(&service).starts_with("usage: histopipe-service "));
    if let Some(page) = man(&prefix.join("share/man/man1/histopipe-service.1")) {
        assert!(page.starts_with("HISTOPIPE-SERVICE(1)"), "{}", &page[..page.len().min(200)]);
        for section in
            ["NAME", "SYNOPSIS", "FILES", "ENVIRONMENT", "SECURITY", "FAILURES", "ERRORS", "EXAMPLE"]
        {
            assert!(page.contains(&format!("\n{section}\n")), "histopipe-service: no {section}");
        }
        assert!(page.contains("\n       histopipe-service - "), "histopipe-service: the NAME line");
        assert!(!page.contains("](") && !page.contains('`'), "histopipe-service: Markdown left over");
        assert!(page.contains("HISTOPIPE_SERVICE_DIR") && page.contains("histopipe-formats(7)"));
    }
    if let Some(page) = man(&prefix.join("share/man/man1/cdf.1")) {
        assert!(page.contains("--bins N") && page.contains("--plot FILE"), "cdf's options");
    }
    if let Some(page) = man(&prefix.join("share/man/man7/histopipe-formats.7")) {
        assert!(page.starts_with("HISTOPIPE-FORMATS(7)") && page.contains("\nGEOMETRY METADATA\n"));
    }
    if let Some(page) = man(&prefix.join("share/man/man7/histopipe-options.7")) {
        assert!(
            page.starts_with("HISTOPIPE-OPTIONS(7)") && page.contains("--mask FILE"),
            "the options' page"
        );
    }

    // Completions list the options --help lists, and offer a list option's values.
    let bash = prefix.join("share/bash-completion/completions/cdf");
    let cdf = bash_complete(&bash, "cdf", &["cdf", "--bi"]);
    assert!(
        cdf.contains("complete -o filenames -F _histopipe_cdf cdf") && cdf.ends_with("--bins\n"),
        "{cdf}"
    );
    assert!(bash_complete(&bash, "cdf", &["cdf", "--format", ""]).ends_with("csv tsv npy\n"));
    let colhist = prefix.join("share/bash-completion/completions/colhist");
    assert!(bash_complete(&colhist, "colhist", &["colhist", "--format", "p"]).ends_with("pgm png\n"));
    let rotate = prefix.join("share/bash-completion/completions/rotate");
    assert!(bash_complete(&rotate, "rotate", &["rotate", "--ex"]).ends_with("--expand\n"));
    let zsh = std::fs::read_to_string(prefix.join("share/zsh/site-functions/_cdf")).unwrap();
    assert!(zsh.starts_with("#compdef cdf\n") && zsh.contains("'--bins[N equal-width bins"));
    let fish = std::fs::read_to_string(prefix.join("share/fish/vendor_completions.d/cdf.fish")).unwrap();
    assert!(fish.contains("complete -c cdf -l format -x -a 'csv tsv npy'"));
    for (shell, dir) in [("zsh", "share/zsh/site-functions"), ("fish", "share/fish/vendor_completions.d")] {
        if Command::new(shell).arg("--version").output().is_ok() {
            for file in files_under(&prefix.join(dir)) {
                run(Command::new(shell).arg("-n").arg(prefix.join(dir).join(file)));
            }
        }
    }

    // Installing again replaces the first install; uninstalling removes it all, and only it.
    run(Command::new(&install).arg("--bin-dir").arg(bin_dir()).arg(&prefix));
    run(Command::new(repo().join("scripts/uninstall")).arg(&prefix));
    assert_eq!(files_under(&prefix), vec![PathBuf::from("share/man/man1/theirs.1")]);
    assert!(!prefix.join("bin").exists() && !prefix.join("share/zsh").exists());
    assert!(!prefix.join("share/man/man1/histopipe-service.1").exists(), "the service's page stayed");
    let again = Command::new(repo().join("scripts/uninstall")).arg(&prefix).output().unwrap();
    assert!(
        !again.status.success() && String::from_utf8_lossy(&again.stderr).contains("nothing to uninstall")
    );
}

/// Drives an interactive zsh on a pseudo-terminal (zpty): `zsh -f DRIVER FPATH OUT LINE` loads
/// the completions in FPATH, types LINE and a tab, and writes each match offered as MATCH|SUFFIX
/// (the text put after it: a space, or nothing), then END, to OUT. `compadd` is wrapped to see
/// the matches and their suffix; the completion system's end hook writes END.
const ZSH_LIST_DRIVER: &str = r#"zmodload zsh/zpty
dir=$1 out=$2 line=$3
rm -f $out
zpty z zsh -f -i
zpty -w z "fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D; out=${(q)out}"
zpty -w z 'compadd() {
  local -a hits; local suffix=" "
  builtin compadd -A hits "$@"
  (( ${@[(I)-S]} )) && suffix=${@[${@[(i)-S]}+1]}
  local h; for h in $hits; do print -r -- "$h|$suffix" >> $out; done
  builtin compadd "$@"
}'
zpty -w z '_hp_done() { print -r -- END >> $out }; comppostfuncs=(_hp_done); bindkey "^I" complete-word'
zpty -w -n z "$line"$'\t'
# Until zsh has completed: a bound on a hung shell, not a measure of anything.
for i in {1..600}; do
  [[ -f $out ]] && grep -q '^END$' $out && break
  sleep 0.1
done
zpty -d z
cat $out
"#;

/// Types lines into an interactive shell on a pseudo-terminal, as a user would, and prints the
/// command line each became after a tab: `python3 DRIVER SHELL SETUP OUT LINE...`. SETUP (run
/// first) loads the completions and binds control-T to writing the command line to OUT; each
/// LINE is typed with a tab and control-T, OUT read once written, and the line killed (control-U).
const LINE_DRIVER: &str = r#"import os, pty, select, sys, time
shell, setup, out, lines = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
argv = {"bash": ["bash", "--norc", "--noprofile", "-i"], "zsh": ["zsh", "-f", "-i"],
        "fish": ["fish", "--no-config", "-i"]}[shell]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm"
    os.execvp(argv[0], argv)
def written():
    return os.path.exists(out) and open(out).read().endswith("\n")
def pump(until):
    # A bound on a hung shell, not a measure of anything.
    end = time.monotonic() + 60
    while not until():
        if time.monotonic() > end:
            os.kill(pid, 9)
            sys.exit(f"{shell} wrote no command line")
        if select.select([fd], [], [], 0.05)[0]:
            try:
                os.read(fd, 65536)
            except OSError:
                pass
os.write(fd, (setup + "\r").encode())
for line in lines:
    os.write(fd, (line + "\t\x14").encode())
    pump(written)
    sys.stdout.write(open(out).read())
    os.remove(out)
    os.write(fd, b"\x15")
os.kill(pid, 9)
"#;

/// A shell's completions of every tool, made as scripts/install makes them.
struct Completions {
    shell: &'static str,
    dir: PathBuf,
}

impl Completions {
    /// `shell`'s completion files for every tool, in a folder of `dir`; `None` (said) where the
    /// shell is not installed.
    fn make(shell: &'static str, dir: &Path) -> Option<Completions> {
        if Command::new(shell).arg("--version").output().is_err() {
            histopipe_gpu::testing::skip(&format!(
                "{shell} completions: {shell} is not installed (scripts/env.sh installs it as root)"
            ));
            return None;
        }
        let dir = dir.join(shell);
        std::fs::create_dir_all(&dir).unwrap();
        for name in tools() {
            let flags = tool(name).arg("--help-flags").output().unwrap().stdout;
            let script = repo().join("scripts/completions.py");
            let out = assert_cmd::Command::new("python3")
                .args([script.to_str().unwrap(), name, shell])
                .write_stdin(flags)
                .output()
                .unwrap();
            assert!(out.status.success(), "completions.py {name} {shell}");
            std::fs::write(dir.join(Completions::file(shell, name)), out.stdout).unwrap();
        }
        std::fs::write(dir.join("list.zsh"), ZSH_LIST_DRIVER).unwrap();
        std::fs::write(dir.join("lines.py"), LINE_DRIVER).unwrap();
        Some(Completions { shell, dir })
    }

    /// Where scripts/install puts `tool`'s completions for `shell`, by name.
    fn file(shell: &str, tool: &str) -> String {
        match shell {
            "zsh" => format!("_{tool}"),
            _ => format!("{tool}.{shell}"),
        }
    }

    /// The words offered for the last of `words` (`["threshold", "--method", ""]`), sorted.
    fn offers(&self, words: &[&str]) -> Vec<String> {
        let name = words[0];
        let file = self.dir.join(Completions::file(self.shell, name));
        let out = match self.shell {
            "bash" => {
                let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
                let line = format!(
                    "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _histopipe_{}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                    file.display(),
                    quoted.join(" "),
                    words.len() - 1,
                    name.replace('-', "_")
                );
                // compopt, which only a completion the shell runs may call, says so on stderr.
                Command::new("bash").arg("-c").arg(line).output().unwrap().stdout
            }
            "zsh" => {
                let out = self.dir.join("offered");
                let driver = self.dir.join("list.zsh");
                let mut zsh = Command::new("zsh");
                run(zsh.arg("-f").arg(driver).arg(&self.dir).arg(&out).arg(words.join(" "))).stdout
            }
            _ => {
                let line = format!("source '{}'; complete -C '{}'", file.display(), words.join(" "));
                run(Command::new("fish").arg("-c").arg(line)).stdout
            }
        };
        let text = String::from_utf8(out).unwrap();
        if self.shell == "zsh" {
            assert!(text.lines().any(|l| l == "END"), "zsh did not complete {words:?}: {text}");
        }
        let word = |l: &str| l.split(['|', '\t']).next().unwrap().to_owned();
        let mut offered: Vec<String> =
            text.lines().filter(|l| !l.is_empty() && *l != "END").map(word).collect();
        offered.sort();
        offered
    }

    /// The command lines `lines` of `tool` become after a tab, typed into the interactive shell.
    fn complete(&self, tool: &str, lines: &[String]) -> Vec<String> {
        let file = self.dir.join(Completions::file(self.shell, tool));
        let out = self.dir.join("line");
        let (file, out) = (file.to_str().unwrap(), out.to_str().unwrap());
        let setup = match self.shell {
            "bash" => {
                format!("source '{file}'; bind -x '\"\\C-t\": printf \"%s\\n\" \"$READLINE_LINE\" > {out}'")
            }
            "zsh" => format!(
                "fpath=({} $fpath); autoload -Uz compinit; compinit -u -D; bindkey '^I' complete-word; \
                 hp_line() {{ print -r -- \"$BUFFER\" > {out} }}; zle -N hp_line; bindkey '^T' hp_line",
                self.dir.display()
            ),
            _ => format!("source '{file}'; function {tool}; end; bind \\ct 'commandline > {out}'"),
        };
        let driver = self.dir.join("lines.py");
        // In the folder above, where a folder is named as a word.
        let mut python = Command::new("python3");
        python.current_dir(self.dir.parent().unwrap());
        let typed = run(python.arg(driver).args([self.shell, &setup, out]).args(lines)).stdout;
        String::from_utf8(typed).unwrap().lines().map(str::to_owned).collect()
    }
}

/// Every option with a fixed set of values completes them, in bash, zsh and fish: each word its
/// definition lists is offered, and typing each word's start and a tab gives the word with a space
/// after it, as the shell shows it to the user; a word with a parameter (`multiotsu:K`) gives its
/// name and colon with no space after it (nor bash's file-name quoting, `multiotsu\:`), so that
/// the parameter is typed next. The options every tool shares are checked on one tool; each
/// tool's own on it.
#[test]
fn every_fixed_set_of_values_completes_in_bash_zsh_and_fish() {
    let dir = temp_dir("completions");
    // A word as offered, and the text a tab puts after it.
    let offered = |word: &str| match word.split_once(':') {
        Some((name, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_uppercase()) => {
            (format!("{name}:"), "")
        }
        _ => (word.to_owned(), " "),
    };
    let threshold = defined("threshold");
    let method = threshold.iter().find(|d| d.long == "--method").expect("threshold --method");
    assert!(method.words.contains(&"multiotsu:K".to_owned()), "threshold --method lists its methods");
    // A folder named as a word: a completion of words is not one of file names (no `otsu/`).
    std::fs::create_dir_all(dir.join("otsu")).unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let Some(completions) = Completions::make(shell, &dir) else { continue };
        for name in tools() {
            let mut typed = Vec::new();
            let mut want = Vec::new();
            for d in defined(name).iter().filter(|d| !d.words.is_empty() && (d.own || name == "threshold")) {
                let mut all: Vec<String> = d.words.iter().map(|w| offered(w).0).collect();
                all.sort();
                assert_eq!(completions.offers(&[name, &d.long, ""]), all, "{shell}: {name} {} <tab>", d.long);
                for word in &d.words {
                    let (word, space) = offered(word);
                    let start = word.trim_end_matches(':');
                    // Only a start no other word shares completes at once.
                    if all.iter().filter(|w| w.starts_with(start)).count() == 1 {
                        typed.push(format!("{name} {} {start}", d.long));
                        want.push(format!("{name} {} {word}{space}", d.long));
                    }
                }
            }
            if !typed.is_empty() {
                assert_eq!(completions.complete(name, &typed), want, "{shell}: {name}, typed {typed:?}");
            }
        }
        let got = completions.complete("threshold", &["threshold --method mul".to_owned()]);
        assert_eq!(got, ["threshold --method multiotsu:"], "{shell}: threshold --method mul<tab>");
    }
}
