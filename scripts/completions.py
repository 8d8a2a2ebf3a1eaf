#!/usr/bin/env python3
"""Shell completions for a histopipe tool, made from its option table, the definitions its --help
is made from too, so they list the options it takes.

    TOOL --help-flags | scripts/completions.py TOOL bash > completions/TOOL
    TOOL --help-flags | scripts/completions.py TOOL zsh > site-functions/_TOOL
    TOOL --help-flags | scripts/completions.py TOOL fish > vendor_completions.d/TOOL.fish

The table has a line per operand and option, its fields separated by tabs: whose it is (tool or
common), its group, its short name, its long name (both empty for an operand), its value's name
(empty for a switch), the words its value may be (separated by spaces), its help. A value named
FILE, PATH, DIR or IMAGE completes file names; one with words offers those words. A word NAME:P
(P in capitals: threshold's multiotsu:K) is a value with a parameter after the colon: it is
offered as NAME:, with no space after it, so the parameter is typed next (bash: compopt -o
nospace; zsh: compadd -S ''; fish adds no space after a colon of itself). Other words on the
command line (input files) complete as file names.
"""

import re
import sys

FILE_ARGUMENTS = ("FILE", "PATH", "DIR", "IMAGE")

# A word of a value that takes a parameter: multiotsu:K, offered as multiotsu:.
PARAMETER = re.compile(r"^([^:\s]+:)[A-Z]+$")


class Option:
    def __init__(self, names, argument, words, description):
        self.names = names
        self.argument = argument
        self.words = words
        self.description = description

    @property
    def long(self):
        return [n for n in self.names if n.startswith("--")]

    @property
    def short(self):
        return [n for n in self.names if not n.startswith("--")]

    def choices(self):
        """The words offered: NAME: for a word NAME:P, whose parameter the user types after it."""
        return [m.group(1) if (m := PARAMETER.match(w)) else w for w in self.words]

    def whole_choices(self):
        return [w for w in self.choices() if not w.endswith(":")]

    def parameter_choices(self):
        return [w for w in self.choices() if w.endswith(":")]

    def takes_file(self):
        return bool(self.argument) and self.argument.startswith(FILE_ARGUMENTS)

    def summary(self):
        """The description's first clause, for menus."""
        text = re.split(r" \[default|; |\. ", self.description)[0].strip()
        return text if len(text) <= 70 else text[:67].rstrip() + "..."


def parse(table):
    """The options of an option table, in order."""
    options = []
    for line in table.splitlines():
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 7:
            sys.exit(f"completions.py: a line of the option table without 7 fields: {line!r}")
        _, _, short, long, value, words, help = fields
        names = ([f"-{short}"] if short else []) + ([f"--{long}"] if long else [])
        if names:
            options.append(Option(names, value, words.split(), help))
    return options


def bash(tool, options):
    fn = "_histopipe_" + re.sub(r"\W", "_", tool)
    cases = []
    for o in options:
        if not o.argument:
            continue
        names = "|".join(o.names)
        if o.choices():
            # Words, not file names: not quoted (multiotsu\:), nor given a / by a folder's name.
            # (compopt works only in a completion bash runs: called otherwise, it says nothing.)
            reply = f'COMPREPLY=($(compgen -W "{" ".join(o.choices())}" -- "$cur")); compopt +o filenames 2>/dev/null'
            if o.parameter_choices():
                # The parameter follows the colon at once.
                reply += (
                    '; if [[ ${#COMPREPLY[@]} == 1 && $COMPREPLY == *: ]]; then compopt -o nospace 2>/dev/null; fi'
                )
        elif o.takes_file():
            reply = 'COMPREPLY=($(compgen -f -- "$cur"))'
        else:
            reply = "COMPREPLY=()"
        cases.append(f"        {names}) {reply}; return 0 ;;")
    words = " ".join(n for o in options for n in o.long + o.short)
    return f"""# bash completion for {tool} (histopipe), made from `{tool} --help-flags` by scripts/completions.py
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
            if o.parameter_choices():
                # Two compadds: the words with a parameter get no space after their colon, which
                # _arguments would take for the end of the action unless escaped.
                whole = " ".join(map(zsh_quote, o.whole_choices()))
                with_parameter = " ".join(map(zsh_quote, o.parameter_choices()))
                action = f'{{compadd -- {whole}; compadd -S "" -- {with_parameter}}}'
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
# zsh completion for {tool} (histopipe), made from `{tool} --help-flags` by scripts/completions.py
_arguments -s \\
  {body}
"""


def fish_quote(text):
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(tool, options):
    lines = [f"# fish completion for {tool} (histopipe), made from `{tool} --help-flags` by scripts/completions.py"]
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
        sys.exit("usage: TOOL --help-flags | scripts/completions.py TOOL bash|zsh|fish")
    tool, shell = sys.argv[1], sys.argv[2]
    options = parse(sys.stdin.read())
    if not any("--help" in o.names for o in options):
        sys.exit(f"completions.py: found no options in {tool}'s option table (not a histopipe tool?)")
    sys.stdout.write({"bash": bash, "zsh": zsh, "fish": fish}[shell](tool, options))


if __name__ == "__main__":
    main()
