"""The command-line parser, built from the declared command table (``vramsym.cli.COMMANDS``)
and the formula library's vocabulary.

A :class:`Flag` is data (its name, kind, choices, help); a command is a list of flag
groups. :func:`parse` turns argv into ``(command, values)``; :func:`help_text` renders the
help from the same data. Choices are shown and accepted with hyphens (``mixed-bf16``) and
accepted with underscores too; values reach the handlers with underscores, the formula
files' spelling. A usage mistake raises :class:`UsageError` (exit 2), with a suggestion.
"""
from __future__ import annotations

import re
import sys

from .errors import VramError, suggest


class UsageError(VramError):
    kind = "usage"

    def __init__(self, message: str, command=None):
        super().__init__(message)
        self.command = command


class Flag:
    """``kind``: value | bool | append | positional | positional+ (one or more)."""
    __slots__ = ("name", "dest", "kind", "help", "choices", "required", "default", "metavar", "group", "short")

    def __init__(self, name, kind="value", help="", choices=None, required=False, default=None,
                 metavar=None, dest=None, group="", short=None):
        self.name, self.kind, self.help, self.choices, self.short = name, kind, help, choices, short
        self.required, self.metavar, self.group = required, metavar, group
        self.default = [] if kind == "append" and default is None else (False if kind == "bool" else default)
        self.dest = dest or name.lstrip("-").replace("-", "_")

    @property
    def positional(self) -> bool:
        return self.kind.startswith("positional")

    def shown_metavar(self) -> str:
        if self.metavar:
            return self.metavar
        if self.choices:
            return "{" + ",".join(show(c) for c in self.choices) + "}"
        return self.dest.upper()


SWITCH_VALUES = ("0", "1")


def show(choice: str) -> str:
    """A choice or name as the command line spells it (``mixed_bf16`` -> ``mixed-bf16``)."""
    return choice.replace("_", "-")


#: what reads as a number, not a flag, after a flag that takes a value (``--batch -3`` is refused later
#: as a value, with the sentence that names the bound)
_NUMBER = re.compile(r"^-(\d|\.\d)")


def _is_flag(arg: str, by_name: dict) -> bool:
    """Whether ``arg`` is a flag, never a value: ``--batch --seq 128`` is ``--batch`` without its value."""
    if arg == "--" or arg.partition("=")[0] in by_name:
        return True
    return arg.startswith("-") and len(arg) > 1 and _NUMBER.match(arg) is None


def _value(flag: Flag, raw: str, command: str) -> str:
    if flag.choices is None:
        return raw
    v = raw.replace("-", "_").replace("+", "_")      # optimizer+params, optimizer-params
    if v not in flag.choices:
        hint = suggest(v, flag.choices)
        raise UsageError(f"{flag.shown_metavar() if flag.positional else flag.name} has no choice '{raw}'" +
                         (f"; did you mean {', '.join(show(h) for h in hint)}?" if hint else "") +
                         f" Choices: {', '.join(show(c) for c in flag.choices)}", command)
    return v


def parse(argv, commands: dict, version: str):
    """``commands``: name -> (help, flags, examples). Returns (command, {dest: value}),
    ``("help", text)`` for a help request or ``("version", text)``."""
    args = list(argv)
    if not args or args[0] in ("-h", "--help"):
        return "help", help_text(commands)
    if args[0] == "--version":
        return "version", f"vramsym {version}"
    command = args[0]
    if command not in commands:
        hint = suggest(command, commands)
        raise UsageError(f"unknown command '{command}'" + (f"; did you mean {', '.join(hint)}?" if hint else
                                                          f"; commands: {', '.join(commands)}"))
    flags = commands[command][1]
    by_name = {f.name: f for f in flags if not f.positional}
    by_name.update({f.short: f for f in flags if f.short})
    positionals = [f for f in flags if f.positional]
    values = {f.dest: (list(f.default) if f.kind == "append" else f.default) for f in flags}
    seen, pos = set(), []
    i = 1
    while i < len(args):
        a = args[i]
        if a == "--":                   # the end of the flags: the rest are positional
            pos.extend(args[i + 1:])
            break
        if a in ("-h", "--help"):
            return "help", help_text(commands, command)
        if _NUMBER.match(a) is None and a.startswith("-") and a != "-" and not a.startswith("--") \
                and a.partition("=")[0] not in by_name:
            raise UsageError(f"unknown flag {a.partition('=')[0]} for `vramsym {command}`; "
                             f"`vramsym {command} --help` lists the flags", command)
        if (a.startswith("--") and len(a) > 2) or a.partition("=")[0] in by_name:
            name, eq, inline = a.partition("=")
            f = by_name.get(name)
            if f is None:
                hint = suggest(name, by_name)
                raise UsageError(f"unknown flag {name} for `vramsym {command}`" +
                                 (f"; did you mean {', '.join(hint)}?" if hint else
                                  f"; `vramsym {command} --help` lists the flags"), command)
            if f.kind == "bool":
                if eq:
                    raise UsageError(f"{name} takes no value", command)
                values[f.dest] = True
            elif f.kind == "switch" and not eq and (i + 1 >= len(args) or args[i + 1].lower() not in SWITCH_VALUES):
                values[f.dest] = "1"        # a true/false input given bare: --sp means --sp 1
            else:
                if eq:
                    raw = inline
                elif i + 1 < len(args) and not _is_flag(args[i + 1], by_name):
                    i += 1
                    raw = args[i]
                else:
                    raise UsageError(f"{name} needs a value ({f.shown_metavar()})", command)
                v = _value(f, raw, command)
                if f.kind == "append":
                    values[f.dest].append(v)
                else:
                    if f.dest in seen and values[f.dest] != v:
                        raise UsageError(f"{name} is given twice, with different values", command)
                    values[f.dest] = v
            seen.add(f.dest)
        else:
            pos.append(a)
        i += 1
    for f in positionals:
        if f.kind == "positional+":
            if not pos:
                raise UsageError(f"missing {f.shown_metavar()}", command)
            values[f.dest], pos = pos, []
        elif pos:
            values[f.dest] = _value(f, pos.pop(0), command) if f.choices else pos.pop(0)
        elif f.required:
            raise UsageError(f"missing {f.shown_metavar()}", command)
    if pos:
        raise UsageError(f"unexpected argument '{pos[0]}'", command)
    for f in flags:
        if f.required and not f.positional and f.dest not in seen:
            raise UsageError(f"{f.name} is required ({f.help.split(';')[0]})", command)
    return command, values


def usage(commands: dict, command=None) -> str:
    if command is None:
        return "usage: vramsym [--version] COMMAND [flags]  (vramsym --help; vramsym COMMAND --help)"
    flags = commands[command][1]
    parts = [f.shown_metavar() for f in flags if f.positional]
    parts += [f"{f.name} {f.shown_metavar()}" if f.kind != "bool" else f.name for f in flags if f.required and not f.positional]
    return f"usage: vramsym {command} " + " ".join(parts) + " [flags]  (vramsym " + command + " --help)"


def help_text(commands: dict, command=None) -> str:
    import textwrap
    if command is None:
        lines = ["usage: vramsym [--version] COMMAND [flags]", "",
                 "GPU memory of LLM jobs from cited formulas.", "", "commands:"]
        w = max(len(c) for c in commands)
        lines += [f"  {c:<{w}}  {h}" for c, (h, _, _) in commands.items()]
        lines += ["", "examples:"] + [f"  {ex[0]}" for _, _, ex in commands.values() if ex]
        return "\n".join(lines) + "\n"
    help_, flags, examples = commands[command]
    lines = [usage(commands, command), "", help_]
    group = None
    for f in flags:
        if f.group != group:
            group = f.group
            lines += ["", (group or "flags") + ":"]
        head = f"  {(f.short + ', ' if f.short else '') + f.name if not f.positional else f.shown_metavar()}"
        if not f.positional and f.kind != "bool":
            head += f" [{f.shown_metavar()}]" if f.kind == "switch" else f" {f.shown_metavar()}"
        text = f.help + (" (required)" if f.required and not f.positional else "")
        lines += textwrap.wrap(text, width=100, initial_indent=f"{head:<30} ",
                               subsequent_indent=" " * 31) if len(head) < 30 else [head] + textwrap.wrap(
            text, width=100, initial_indent=" " * 31, subsequent_indent=" " * 31)
    if examples:
        lines += ["", "examples:"] + [f"  {e}" for e in examples]
    return "\n".join(lines) + "\n"


def print_usage_error(e: UsageError, commands: dict) -> None:
    print(usage(commands, e.command if e.command in commands else None), file=sys.stderr)
    where = f"vramsym {e.command}" if e.command else "vramsym"
    print(f"{where}: error: {e}", file=sys.stderr)


def prescan(argv, name: str, kind: str = "append"):
    """The values of one flag before the full parse (``--formulas`` decides the vocabulary
    the full parser is built from); tolerant of everything else."""
    out = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":                   # the end of the flags
            break
        if a == name:
            if kind == "bool":
                out.append(True)
            elif i + 1 < len(argv):
                out.append(argv[i + 1])
                i += 1
        elif a.startswith(name + "=") and kind != "bool":
            out.append(a.split("=", 1)[1])
        i += 1
    return bool(out) if kind == "bool" else out
