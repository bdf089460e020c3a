"""Logging: lovia stays silent until asked, and ``enable_logging()`` asks.

lovia writes its narrative (``run.start``, ``model.done: ...``, ``tool.error: ...``) to the
``lovia`` logger and its children. Importing lovia attaches a ``NullHandler`` to that logger,
so a program that never configures logging sees no output and no "no handlers" warning.

``enable_logging()`` is the one-line opt-in for scripts and notebooks: one stream handler on
the ``lovia`` logger, coloured when the stream is a terminal. Production programs configure
:mod:`logging` themselves and never need it.

The same without code: ``LOVIA_LOG=info`` (or ``debug``, ``warning``...; ``1`` means
``info``) in the environment calls ``enable_logging`` when lovia is imported, writing to
standard error, or to the file ``LOVIA_LOG_FILE`` names (appended to).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping
from typing import TextIO

__all__ = [
    "CURRENT_AGENT",
    "ColorFormatter",
    "agent_tag",
    "enable_logging",
    "enable_logging_from_env",
    "supports_color",
]

LOGGER_NAME = "lovia"

logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())

CURRENT_AGENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "lovia_current_agent", default=None
)
"""The name of the agent the current task runs (set by the run loop), for log filters that
want to say which agent wrote a line."""


@contextlib.contextmanager
def agent_tag(name: str | None) -> Iterator[None]:
    """Set ``CURRENT_AGENT`` to ``name`` inside the block, and put back what it was after
    (a run nested in a tool hands its caller's tag back)."""
    token = CURRENT_AGENT.set(name)
    try:
        yield
    finally:
        CURRENT_AGENT.reset(token)


_MANAGED = "_lovia_enable_logging"


def enable_logging(
    level: int | str = logging.INFO,
    *,
    format: str = "%(asctime)s %(levelname)-7s %(name)s: %(message)s",
    datefmt: str = "%H:%M:%S",
    stream: TextIO | None = None,
    color: bool | None = None,
    propagate: bool = False,
) -> logging.Logger:
    """Send lovia's log lines to ``stream`` (standard error by default) and return the
    ``lovia`` logger.

    Calling it again replaces the handler the previous call attached (never duplicates
    lines); handlers you added yourself are left alone. ``color=None`` colours only a
    terminal, and never when ``NO_COLOR`` is set or ``TERM=dumb``. ``propagate=False`` (the
    default) keeps records from also reaching the root logger, which would print them twice
    under ``logging.basicConfig`` or uvicorn.
    """
    if isinstance(level, str):
        resolved = logging.getLevelName(level.upper())
        if not isinstance(resolved, int):
            from .errors import UserError

            raise UserError(
                f"unknown logging level {level!r}",
                hint="use DEBUG, INFO, WARNING, ERROR or CRITICAL (or a logging.* number)",
            )
        level = resolved
    log = logging.getLogger(LOGGER_NAME)
    for handler in list(log.handlers):
        if getattr(handler, _MANAGED, False):
            log.removeHandler(handler)
            handler.close()
    target = stream if stream is not None else sys.stderr
    new = logging.StreamHandler(stream)
    use_color = supports_color(target) if color is None else color
    formatter_cls = ColorFormatter if use_color else logging.Formatter
    new.setFormatter(formatter_cls(format, datefmt=datefmt))
    setattr(new, _MANAGED, True)
    log.addHandler(new)
    log.setLevel(level)
    log.propagate = propagate
    return log


_RESET = "\033[0m"
_DIM = "\033[2m"
_BOLD = "\033[1m"
_LEVEL_COLORS = {
    logging.DEBUG: "\033[2m",
    logging.INFO: "\033[32m",
    logging.WARNING: "\033[33m",
    logging.ERROR: "\033[31m",
    logging.CRITICAL: "\033[1;31m",
}
_LEVEL_WIDTH = 7  # the ``-7s`` of the default format: pad before colouring so columns align
_EVENT_TOKEN = re.compile(r"^([a-z][a-z0-9_.]*:)")


class ColorFormatter(logging.Formatter):
    """Colours the level name, dims the logger name and bolds a leading ``area.event:``
    token. The record is restored afterwards, so other handlers see it plain."""

    def format(self, record: logging.LogRecord) -> str:
        saved = (record.levelname, record.name, record.msg, record.args)
        message = record.getMessage()
        color = _LEVEL_COLORS.get(record.levelno, "")
        padded = f"{record.levelname:<{_LEVEL_WIDTH}}"
        record.levelname = f"{color}{padded}{_RESET}" if color else padded
        record.name = f"{_DIM}{record.name}{_RESET}"
        record.msg = _EVENT_TOKEN.sub(f"{_BOLD}\\1{_RESET}", message)
        record.args = None
        try:
            return super().format(record)
        finally:
            record.levelname, record.name, record.msg, record.args = saved


def supports_color(stream: TextIO) -> bool:
    """Whether ANSI colour suits ``stream``: a terminal, ``NO_COLOR`` unset, ``TERM`` not
    ``dumb``."""
    if os.environ.get("NO_COLOR") is not None or os.environ.get("TERM") == "dumb":
        return False
    try:
        if not stream.isatty():
            return False
    except Exception:
        return False
    if sys.platform == "win32":  # pragma: no cover - enables VT processing on a console
        try:
            os.system("")
        except Exception:
            return False
    return True


_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")


def enable_logging_from_env(environ: Mapping[str, str] | None = None) -> logging.Logger | None:
    """``enable_logging`` as ``LOVIA_LOG`` and ``LOVIA_LOG_FILE`` ask (called when lovia is
    imported); ``None`` when ``LOVIA_LOG`` is unset or off. A value that is no level is a
    ``UserWarning`` naming the ones that are, and nothing is enabled."""
    env = os.environ if environ is None else environ
    value = env.get("LOVIA_LOG", "").strip()
    if value.lower() in _OFF:
        return None
    level = "INFO" if value.lower() in _ON else value.upper()
    if not isinstance(logging.getLevelName(level), int):
        import warnings

        warnings.warn(
            f"LOVIA_LOG={value!r} is not a logging level; lovia's log stays off (use "
            "LOVIA_LOG=info, debug, warning or error)",
            UserWarning,
            stacklevel=2,
        )
        return None
    path = env.get("LOVIA_LOG_FILE", "").strip()
    if not path:
        return enable_logging(level)
    stream = open(path, "a", encoding="utf-8", buffering=1)  # open for the process's life
    atexit.register(stream.close)
    return enable_logging(level, stream=stream, color=False)
