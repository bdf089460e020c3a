"""The paths a shell command line names, read lexically, so the path ACL can judge them too.

A redirection target (``>``, ``>>``, ``&>``, ``>|``) is a write; ``<`` and every other
argument that looks like a path is a read. Whether a program writes to an argument (``cp a
b``) cannot be told from the words, so such arguments count as reads. The claims can only
add restrictions to a command's verdict, never lift one; interpreters (``python -c``) and
variables are out of sight.
"""

from __future__ import annotations

import re
import shlex

from .policy import FileOp

__all__ = ["extract_path_claims"]

_WRITE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">&", ">|"})
_HEREDOCS = frozenset({"<<", "<<-", "<<<"})
_OPERATOR = re.compile(r"^[();<>|&]+$")
_FD = re.compile(r"^(\d+|-)$")
# shell plumbing, not files: judging them would turn `2>/dev/null` into an outside write
_PLUMBING = frozenset(
    {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"}
)


def extract_path_claims(command: str) -> list[tuple[FileOp, str]]:
    """``[(op, path), ...]`` for the paths ``command`` names, in order; ``[]`` when it does
    not parse (an unclosed quote: the shell refuses it too)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars="();<>|&")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    claims: list[tuple[FileOp, str]] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if _OPERATOR.match(token):
            target = tokens[i] if i < len(tokens) else None
            if target is None or _OPERATOR.match(target):
                continue
            if token in _HEREDOCS:
                i += 1  # a delimiter or literal text, not a file
            elif token in _WRITE_REDIRECTS or token.endswith((">", ">>")):
                i += 1
                if not (token in (">&", "<&") and _FD.match(target)):
                    _claim(claims, "write", target.strip("`"))
            elif token in ("<", "<&"):
                i += 1
                if not (token == "<&" and _FD.match(target)):
                    _claim(claims, "read", target.strip("`"))
            continue
        path = _pathish(token.strip("`"))
        if path is not None:
            _claim(claims, "read", path)
    return claims


def _claim(claims: list[tuple[FileOp, str]], op: FileOp, path: str) -> None:
    if path and path not in _PLUMBING and not path.startswith("/dev/fd/"):
        claims.append((op, path))


def _pathish(token: str) -> str | None:
    """The path in a word, or ``None`` for a word that names none (a subcommand, a flag, a
    URL)."""
    if not token or "://" in token:
        return None
    if token.startswith("-"):
        _, eq, value = token.partition("=")  # --out=/var/log/x: the value is a path
        return _pathish(value) if eq else None
    name, eq, value = token.partition("=")
    if eq and name and value.startswith(("/", "~")):
        return value  # KEY=/abs/path, dd of=/dev/sdb
    if token.startswith(("/", "~", ".")) or "/" in token:
        return token
    if "." in token.strip("."):
        return token  # a file name with an extension: main.c, notes.txt
    return None
