"""Reading a shell command line the way the policy needs it: the simple commands it runs.

The policy judges every simple command of a line on its own (``a && b`` runs two). Two
readings are made and both are judged, the stricter verdict winning:

- ``plain_segments``: the line cut at the control operators (``;``, ``&&``, ``||``, ``|``,
  ``&``, newlines), quotes ignored. A quoted operator only adds a segment, so this reading
  can only be stricter than the shell.
- ``nested_segments``: a quote-aware reading that also finds the commands a line hides:
  subshells ``( ... )``, groups ``{ ...; }``, command substitutions ``$( ... )`` and
  backticks, process substitutions ``<( ... )``. ``None`` when the line does not parse
  (an unclosed quote or parenthesis: the shell refuses such a line too).

``command_words`` then turns one segment into the words of the program it runs: quotes
removed as the shell removes them, leading ``NAME=value`` assignments and wrappers
(``env``, ``command``, ``nohup``, ``sudo``, ``timeout 5``, ...) skipped, a path reduced to
its last part (``/bin/rm`` is ``rm``). ``inner_commands`` finds the command strings handed
to a shell (``bash -c '...'``) or to ``eval``, which the policy judges as lines of their own.

This is a lexical reading, not a shell: variables, aliases, functions and interpreters
(``python -c``) are out of its sight.
"""

from __future__ import annotations

import re
import shlex

__all__ = [
    "command_lines",
    "command_words",
    "inner_commands",
    "nested_segments",
    "plain_segments",
]

# `&` separates only as the background operator: not in `2>&1`, `>&2`, `<&0`, `&>`, `&&`
_PLAIN_SPLIT = re.compile(r"\|\||&&|[;\n\r]|\|(?!\|)|(?<![<>])&(?![&>])")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
# wrappers that run the rest of their words as a command, and their options taking a value
_WRAPPERS: dict[str, frozenset[str]] = {
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "sudo": frozenset({"-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-D"}),
    "doas": frozenset({"-u", "-C"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "xargs": frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "-e", "-i", "-l"}),
    "setsid": frozenset(),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "chrt": frozenset(),
    "taskset": frozenset(),
    "!": frozenset(),
    "{": frozenset(),
}
_TAKES_POSITIONAL = frozenset({"timeout", "taskset", "chrt"})  # a duration, mask or priority


def plain_segments(command: str) -> list[str]:
    """The line cut at its control operators, quotes ignored; empty segments dropped."""
    return [s.strip() for s in _PLAIN_SPLIT.split(command) if s.strip()]


class _Unbalanced(ValueError):
    pass


def _unclosed(what: str) -> str:
    return f"unclosed {what}"


def nested_segments(command: str) -> list[str] | None:
    """Every simple command the line runs, hidden ones included; ``None`` if it does not
    parse."""
    try:
        return _NestedReader(command).read()
    except _Unbalanced:
        return None


class _NestedReader:
    """A small scanner: quotes, escapes, substitutions and grouping, nothing more."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.out: list[str] = []

    def read(self) -> list[str]:
        self._commands(closer=None)
        return [s for s in (seg.strip() for seg in self.out) if s and s not in ("}", "{")]

    def _flush(self, buf: list[str]) -> None:
        self.out.append("".join(buf))
        buf.clear()

    def _commands(self, closer: str | None) -> None:
        """Read commands until ``closer`` (``)`` or a backtick) or the end; segments go to
        ``self.out``. A substitution inside a word reads its own commands, and the word keeps
        a stand-in for it."""
        text, buf = self.text, list[str]()
        while self.i < len(text):
            c = text[self.i]
            if closer is not None and c == closer:
                self.i += 1
                self._flush(buf)
                return
            if c == "\\":
                buf.append(text[self.i : self.i + 2])
                self.i += 2
            elif c == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise _Unbalanced(_unclosed("a single quote"))
                buf.append(text[self.i : end + 1])
                self.i = end + 1
            elif c == '"':
                self._double_quoted(buf)
            elif text.startswith(("$(", "<(", ">("), self.i):
                self.i += 2
                self._commands(closer=")")
                buf.append("$SUB")
            elif c == "`":
                self.i += 1
                self._commands(closer="`")
                buf.append("$SUB")
            elif c == "(":  # a subshell: its commands are commands of this line
                self.i += 1
                self._flush(buf)
                self._commands(closer=")")
            elif c == "#" and (not buf or buf[-1][-1:].isspace()):
                self._skip_comment()
            else:
                self._plain_char(c, buf)
        if closer is not None:
            raise _Unbalanced(_unclosed(f"a {closer!r}"))
        self._flush(buf)

    def _plain_char(self, c: str, buf: list[str]) -> None:
        text, i = self.text, self.i
        op = _operator_at(text, i)
        if op:
            self._flush(buf)
            self.i += len(op)
            return
        if (
            c in "{}"
            and (i == 0 or text[i - 1] in " \t;\n&|(")
            and text[i + 1 : i + 2]
            in (
                "",
                " ",
                "\t",
                "\n",
                ";",
            )
        ):
            self._flush(buf)  # a group's brace stands alone as a word
        else:
            buf.append(c)
        self.i += 1

    def _double_quoted(self, buf: list[str]) -> None:
        """A double-quoted word: only ``$( )`` and backticks are live inside it."""
        text = self.text
        buf.append('"')
        self.i += 1
        while self.i < len(text):
            c = text[self.i]
            if c == "\\":
                buf.append(text[self.i : self.i + 2])
                self.i += 2
            elif c == '"':
                buf.append('"')
                self.i += 1
                return
            elif text.startswith("$(", self.i):
                self.i += 2
                self._commands(closer=")")
                buf.append("$SUB")
            elif c == "`":
                self.i += 1
                self._commands(closer="`")
                buf.append("$SUB")
            else:
                buf.append(c)
                self.i += 1
        raise _Unbalanced(_unclosed("a double quote"))

    def _skip_comment(self) -> None:
        end = self.text.find("\n", self.i)
        self.i = len(self.text) if end < 0 else end


def _operator_at(text: str, i: int) -> str:
    """The control operator starting at ``text[i]``, or ''."""
    for op in ("&&", "||", "|&", ";;", ";", "|", "\n", "\r"):
        if text.startswith(op, i):
            return op
    if text[i] == "&" and (i == 0 or text[i - 1] not in "<>") and text[i + 1 : i + 2] != ">":
        return "&"  # the background operator, not part of `2>&1`, `<&0` or `&>`
    return ""


def command_words(segment: str) -> list[str]:
    """The words of the program ``segment`` runs: quotes removed, leading assignments and
    wrappers skipped, the program's path reduced to its name."""
    try:
        words = shlex.split(segment, posix=True)
    except ValueError:
        words = segment.split()
    words = _strip_wrappers(words)
    if words and "/" in words[0]:
        words[0] = words[0].rstrip("/").rsplit("/", 1)[-1] or words[0]
    return words


def _strip_wrappers(words: list[str]) -> list[str]:
    i = 0
    for _ in range(len(words) + 1):  # each pass strips one wrapper or assignment
        while i < len(words) and _ASSIGNMENT.match(words[i]):
            i += 1
        if i >= len(words):
            return []
        name = words[i].rsplit("/", 1)[-1]
        if name not in _WRAPPERS:
            return words[i:]
        i = _past_options(words, i + 1, _WRAPPERS[name])
        if name in _TAKES_POSITIONAL and i < len(words):
            i += 1
    return words[i:]


def _past_options(words: list[str], i: int, with_value: frozenset[str]) -> int:
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        word = words[i]
        i += 1
        if word == "--":
            break
        if word in with_value and "=" not in word:
            i += 1
    return i


def inner_commands(words: list[str]) -> list[str]:
    """Command strings a shell (``sh -c STRING``) or ``eval`` is given to run."""
    if not words:
        return []
    if words[0] == "eval":
        return [" ".join(words[1:])] if len(words) > 1 else []
    if words[0] not in _SHELLS:
        return []
    for n, word in enumerate(words[1:], start=1):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return [words[n + 1]] if n + 1 < len(words) else []
        if not word.startswith("-"):
            break  # a script file: its commands are out of sight
    return []


def command_lines(command: str, *, depth: int = 0) -> list[str]:
    """``command`` and every command string it hands to a shell or ``eval``, at any depth
    (up to eight levels)."""
    lines = [command]
    if depth >= 8:
        return lines
    for segment in nested_segments(command) or plain_segments(command):
        for inner in inner_commands(command_words(segment)):
            lines += command_lines(inner, depth=depth + 1)
    return lines
