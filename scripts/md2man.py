#!/usr/bin/env python3
"""Converts one of histopipe's Markdown manuals (docs/TOOL.md) to a man page (roff, man macros).

    scripts/md2man.py docs/cdf.md --version 0.1.0 > cdf.1

The manuals are the one source: scripts/install makes the installed man pages from them with this
script, so the two never differ. It knows the Markdown the manuals are written in, not all of
Markdown: `# title(N)` (or any `# title`, with --name and --section), `##` and `###` headings,
paragraphs, `-` lists and `1.` lists with indented continuation lines, four-space code blocks,
pipe tables (set as preformatted text), and inline `code`, **bold**, *italic* and [links](x.md).
A link to another tool's manual becomes a man page reference, cdf(1); to formats.md,
histopipe-formats(7); to options.md, histopipe-options(7) (the service's manual, histopipe-service.md,
is a tool's: histopipe-service(1)). Anything else is kept as text, escaped for roff.

With --flags FILE (the tool's option table, as `TOOL --help-flags` prints it from the options'
definitions, which `--help` is made from too), the tool's options become the section OPTIONS and
those every tool shares the section OPTIONS EVERY TOOL SHARES, before ERRORS: so the page lists
every option the tool takes, in the words of its --help.
"""

import argparse
import re
import sys
from pathlib import Path

# Manuals that are not a tool's, and the man page each becomes.
PAGES = {
    "formats": ("histopipe-formats", "7"),
    "options": ("histopipe-options", "7"),
}


SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉ₙ", "0123456789n")


def plain(text):
    """Characters groff cannot show in every locale, spelled so that it can: superscripts beyond
    Latin-1 (2¹⁵ as 2^15; ² and ³ alone it has), subscripts (θₙ as θ_n) and the ellipsis."""
    text = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", lambda m: m.group(0) if m.group(0) in "²³" else "^" + m.group(0).translate(SUPERSCRIPTS), text)
    text = re.sub(r"[₀₁₂₃₄₅₆₇₈₉ₙ]+", lambda m: "_" + m.group(0).translate(SUBSCRIPTS), text)
    return text.replace("…", "...")


def escape(text):
    """Text as roff reads it literally: backslashes, and hyphens as ASCII minus (so options copy
    and paste as typed)."""
    return plain(text).replace("\\", "\\e").replace("-", "\\-")


def reference(target, label):
    """What a link to `target` reads as in a man page."""
    name = Path(target.split("#")[0]).stem
    if target.startswith("#") or not target.split("#")[0].endswith(".md"):
        return label
    page, section = PAGES.get(name, (name, "1"))
    if label.strip("`") in (f"{name}.md", name, target):
        return f"{page}({section})"
    return f"{label} (see {page}({section}))"


INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])|\[([^\]]+)\]\(([^)]+)\)")


def inline(text):
    """A line of Markdown text as roff: code and bold in bold, emphasis in italics."""
    out, pos = [], 0
    for m in INLINE.finditer(text):
        out.append(escape(text[pos : m.start()]))
        code, bold, italic, label, target = m.groups()
        if code is not None:
            out.append(r"\fB" + escape(code) + r"\fR")
        elif bold is not None:
            out.append(r"\fB" + inline(bold) + r"\fR")
        elif italic is not None:
            out.append(r"\fI" + inline(italic) + r"\fR")
        else:
            out.append(inline(reference(target, label)))
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def line(text):
    """A roff text line: one that starts with a control character is protected."""
    return "\\&" + text if text[:1] in (".", "'") else text


def preformatted(lines):
    return [".PP", ".RS 4", ".nf"] + [line(escape(l)) for l in lines] + [".fi", ".RE"]


def table(rows):
    """A pipe table for tbl, which man runs on a page whose first line asks for it: each cell a
    text block, so long cells wrap; the column with the most text takes the width left over."""
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
    cells = [r for r in cells if not all(re.fullmatch(r":?-+:?", c) for c in r)]
    columns = max(map(len, cells))
    cells = [r + [""] * (columns - len(r)) for r in cells]
    widest = max(range(columns), key=lambda i: sum(len(r[i]) for r in cells))
    spec = " ".join("lx" if i == widest else "l" for i in range(columns))
    out = [".PP", ".TS", "tab(|);", " ".join("lB" for _ in range(columns)), spec + "."]
    for n, row in enumerate(cells):
        out.append("|".join("T{\n" + line(inline(c)) + "\nT}" for c in row))
        if n == 0:
            out.append("_")
    return out + [".TE"]


LIST_ITEM = re.compile(r"^(-|\d+\.) (.*)$")


def convert(markdown, name, section, version, options=()):
    """The man page of `markdown`, with the roff lines `options` before its ERRORS section (or at
    the end)."""
    lines = markdown.splitlines()
    out = []
    title = lines[0] if lines else ""
    m = re.fullmatch(r"# (\S+)\((\d)\)", title)
    if m:
        name, section = m.group(1), m.group(2)
        lines = lines[1:]
    elif title.startswith("# ") and name:
        lines = lines[1:]
    elif not name:
        sys.exit(f"md2man: the first line is not '# name(section)' and no --name was given: {title!r}")
    out.append(f'.TH "{name.upper()}" "{section}" "" "histopipe {version}" "histopipe manual"')
    # Left-aligned, never hyphenated: options and numbers stay whole, as typed.
    out += [".ad l", ".nh"]
    if not m:
        # A manual with a title of its own: its title is the page's NAME line, and what comes
        # before its first section is the description.
        out += [".SH NAME", f"{escape(name)} \\- {inline(title[2:].strip())}", ".SH DESCRIPTION"]
    i, heading = 0, None
    while i < len(lines):
        text = lines[i]
        if not text.strip():
            i += 1
            continue
        if text.startswith("### "):
            out.append(".SS " + inline(text[4:].strip()))
            i += 1
        elif text.startswith("## "):
            heading = text[3:].strip()
            # Man's headings are upper case; one that names an option keeps its case.
            shown = heading.upper() if re.fullmatch(r"[A-Za-z ]+", heading) else inline(heading)
            out.append(f'.SH "{shown}"')
            i += 1
        elif text.startswith("    "):
            block = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += preformatted(block)
        elif text.lstrip().startswith("|"):
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(lines[i])
                i += 1
            out += table(rows)
        elif LIST_ITEM.match(text):
            marker, first = LIST_ITEM.match(text).groups()
            item = [first]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                item.append(lines[i].strip())
                i += 1
            tag, indent = (r"\(bu", 2) if marker == "-" else (marker, 4)
            # Joined first: a code span or a link may run over a line break.
            out += [f".IP {tag} {indent}", line(inline(" ".join(item)))]
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not re.match(r"^(#|    |\s*\||- |\d+\. )", lines[i]):
                para.append(lines[i].strip())
                i += 1
            if heading and heading.lower() == "name":
                # "`tool` — what it does": man's NAME line is "tool \- what it does".
                joined = " ".join(para)
                left, _, right = joined.partition(" — ")
                out.append(f"{inline(left)} \\- {inline(right)}" if right else inline(joined))
            elif heading and heading.lower() == "synopsis":
                # Each form of the command on a line of its own. A line of code that does not
                # start with the command's name goes on with the form above it (a long form,
                # wrapped in the manual): man fills them as one.
                out.append(".PP")
                for n, t in enumerate(para):
                    goes_on = t.startswith("`") and not t.startswith(f"`{name} ")
                    out += ([".br"] if n and not goes_on else []) + [line(inline(t))]
            else:
                out += [".PP", line(inline(" ".join(para)))]
    at = out.index('.SH "ERRORS"') if '.SH "ERRORS"' in out else len(out)
    out[at:at] = options
    # Tables need tbl, which man runs when the page's first line says so.
    preamble = ["'\\\" t"] if ".TS" in out else []
    return "\n".join(preamble + out) + "\n"


def option_sections(table):
    """The man page's option sections, from the tool's option table (`TOOL --help-flags`: a line
    per operand and option, its fields separated by tabs: whose it is, tool or common; its group;
    its short name; its long name; its value's name; the words its value may be; its help): OPTIONS
    for the tool's own, OPTIONS EVERY TOOL SHARES for the rest, under their groups."""
    rows = [l.split("\t") for l in table.splitlines() if l.strip()]
    if any(len(r) != 7 for r in rows):
        sys.exit("md2man: the option table has a line without 7 fields")
    out = []
    for whose, title in (("tool", "OPTIONS"), ("common", "OPTIONS EVERY TOOL SHARES")):
        entries = [r for r in rows if r[0] == whose]
        if not entries:
            continue
        out.append(f'.SH "{title}"')
        group = None
        for _, heading, short, long, value, _, help in entries:
            if whose == "common" and heading != group:
                out.append(".SS " + escape(heading))
                group = heading
            names = ([rf"\fB{escape('-' + short)}\fR"] if short else []) + ([rf"\fB{escape('--' + long)}\fR"] if long else [])
            tag = ", ".join(names)
            if value:
                tag += (" " if tag else "") + rf"\fI{escape(value)}\fR"
            out += [".TP", line(tag), line(escape(help))]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("markdown", type=Path)
    p.add_argument("--version", default="", help="the version the page's footer names")
    p.add_argument("--name", help="the page's name, for a manual whose title is not 'name(N)'")
    p.add_argument("--section", default="1")
    p.add_argument("--flags", type=Path, help="the tool's option table (TOOL --help-flags): its options become sections")
    args = p.parse_args()
    name, section = args.name, args.section
    if args.name is None and args.markdown.stem in PAGES:
        name, section = PAGES[args.markdown.stem]
    markdown = args.markdown.read_text(encoding="utf-8")
    options = option_sections(args.flags.read_text(encoding="utf-8")) if args.flags else []
    sys.stdout.write(convert(markdown, name, section, args.version, options))


if __name__ == "__main__":
    main()
