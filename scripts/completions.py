#!/usr/bin/env python3
"""Shell completions for a histopipe tool, made from its --help, so they list the options it has.

    TOOL --help | scripts/completions.py TOOL bash > completions/TOOL
    TOOL --help | scripts/completions.py TOOL zsh > site-functions/_TOOL
    TOOL --help | scripts/completions.py TOOL fish > vendor_completions.d/TOOL.fish

An option line of --help is two spaces, then options separated by ", " (each -x or --name, with
an argument in capitals if it takes one: --bins N, --line X0,Y0,X1,Y1), then two spaces (one after
a long argument) and the description, whose continuation lines are indented further. An argument
named FILE, PATH, DIR or IMAGE completes file names; a description that starts with a list of
words, as "csv, tsv or pgm [default: csv]", offers those words. Other words on the command line
(input files) complete as file names.
"""

import re
import sys

NAME = r"(?:-[A-Za-z]|--[a-z0-9][a-z0-9-]*)"
ITEM = rf"{NAME}(?: [A-Z][^\s,]*(?:,[^\s,]+)*)?"
OPTION_LINE = re.compile(rf"^ {{2,8}}({ITEM}(?:, {ITEM})*)(?:\s+(\S.*))?$")
CHOICES = re.compile(r"^([a-z0-9]+(?:, [a-z0-9]+)*,? or [a-z0-9]+)(?=$|[\s;:\[(])")
FILE_ARGUMENTS = ("FILE", "PATH", "DIR", "IMAGE")


class Option:
    def __init__(self, names, argument, description):
        self.names = names
        self.argument = argument
        self.description = description

    @property
    def long(self):
        return [n for n in self.names if n.startswith("--")]

    @property
    def short(self):
        return [n for n in self.names if not n.startswith("--")]

    def choices(self):
        m = CHOICES.match(self.description) if self.argument else None
        return re.split(r",? or |, ", m.group(1)) if m else []

    def takes_file(self):
        return bool(self.argument) and self.argument.startswith(FILE_ARGUMENTS)

    def summary(self):
        """The description's first clause, for menus."""
        text = re.split(r" \[default|; |\. ", self.description)[0].strip()
        return text if len(text) <= 70 else text[:67].rstrip() + "..."


def parse(help_text):
    """The options of a --help text, in order."""
    options, current = [], []
    for line in help_text.splitlines():
        m = OPTION_LINE.match(line)
        if m:
            spec, description = m.group(1), m.group(2) or ""
            items = [i.partition(" ") for i in re.split(r", (?=-)", spec)]
            names = [name for name, _, _ in items]
            if len(items) == 2 and len({arg for _, _, arg in items}) == 1 and names[0][:2] != "--" \
                    and names[1][:2] == "--":
                # "-h, --help": one option, two names.
                current = [Option(names, items[0][2], description)]
            else:
                current = [Option([name], arg, description) for name, _, arg in items]
            options += current
        elif current and line.startswith(" " * 10) and line.strip():
            # The description above goes on, for every option its line named.
            for o in current:
                o.description = (o.description + " " + line.strip()).strip()
        else:
            current = []
    return options


def bash(tool, options):
    fn = "_histopipe_" + re.sub(r"\W", "_", tool)
    cases = []
    for o in options:
        if not o.argument:
            continue
        names = "|".join(o.names)
        if o.choices():
            reply = f'COMPREPLY=($(compgen -W "{" ".join(o.choices())}" -- "$cur"))'
        elif o.takes_file():
            reply = 'COMPREPLY=($(compgen -f -- "$cur"))'
        else:
            reply = "COMPREPLY=()"
        cases.append(f"        {names}) {reply}; return ;;")
    words = " ".join(n for o in options for n in o.long + o.short)
    return f"""# bash completion for {tool} (histopipe), made from `{tool} --help` by scripts/completions.py
{fn}() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
    case $prev in
{chr(10).join(cases)}
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "{words}" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -o filenames -F {fn} {tool}
"""


def zsh_quote(text):
    return text.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def zsh(tool, options):
    specs = []
    for o in options:
        desc = zsh_quote(o.summary())
        if o.argument:
            action = "_files" if o.takes_file() else (f"({' '.join(o.choices())})" if o.choices() else " ")
            tail = f":{zsh_quote(o.argument)}:{action}"
        else:
            tail = ""
        if len(o.names) > 1:
            exclusive = " ".join(o.names)
            specs.append(f"'({exclusive})'{{{','.join(o.names)}}}'[{desc}]{tail}'")
        else:
            specs.append(f"'{o.names[0]}[{desc}]{tail}'")
    specs.append("'*:input file:_files'")
    body = " \\\n  ".join(specs)
    return f"""#compdef {tool}
# zsh completion for {tool} (histopipe), made from `{tool} --help` by scripts/completions.py
_arguments -s \\
  {body}
"""


def fish_quote(text):
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(tool, options):
    lines = [f"# fish completion for {tool} (histopipe), made from `{tool} --help` by scripts/completions.py"]
    for o in options:
        parts = [f"complete -c {tool}"]
        parts += [f"-s {n[1:]}" for n in o.short] + [f"-l {n[2:]}" for n in o.long]
        if o.argument:
            if o.takes_file():
                parts.append("-r -F")
            elif o.choices():
                parts.append(f"-x -a {fish_quote(' '.join(o.choices()))}")
            else:
                parts.append("-x")
        parts.append(f"-d {fish_quote(o.summary())}")
        lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("bash", "zsh", "fish"):
        sys.exit("usage: TOOL --help | scripts/completions.py TOOL bash|zsh|fish")
    tool, shell = sys.argv[1], sys.argv[2]
    options = parse(sys.stdin.read())
    if not any("--help" in o.names for o in options):
        sys.exit(f"completions.py: found no options in {tool}'s --help (not a histopipe tool?)")
    sys.stdout.write({"bash": bash, "zsh": zsh, "fish": fish}[shell](tool, options))


if __name__ == "__main__":
    main()
