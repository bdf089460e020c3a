"""Time: the ``now`` tool, and ``current_date`` for stating today's date in the prompt."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import ToolError, UserError
from ..run_context import RunContext
from .base import tool

__all__ = ["current_date", "now"]

_TZ_HINT = (
    "use an IANA name such as 'UTC' or 'Asia/Shanghai' (on Windows, `pip install tzdata` "
    "provides the names)"
)


def _zone(name: str | None, error: type[ToolError] | type[UserError]) -> tzinfo | None:
    if name is None:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise error(f"Unknown timezone {name!r}", hint=_TZ_HINT) from exc


@tool
def now(
    tz: Annotated[
        str | None, "IANA timezone name such as 'UTC' or 'Asia/Shanghai'; default: local"
    ] = None,
) -> str:
    """The current wall-clock time as ISO-8601, with its UTC offset (the server's local
    timezone unless ``tz`` names one)."""
    zone = _zone(tz, ToolError)
    return datetime.now(zone).isoformat() if zone else datetime.now().astimezone().isoformat()


def current_date(tz: str | None = None) -> Callable[[RunContext[Any]], str]:
    """An instruction fragment stating today's date (``agent.instruction(current_date())``),
    so the model puts the right year into searches without calling ``now`` first. Date only,
    so it stays constant within a prompt-cache window. An unknown ``tz`` raises ``UserError``
    here, not mid-run."""
    zone = _zone(tz, UserError)

    def todays_date(ctx: RunContext[Any]) -> str:
        today = datetime.now(zone) if zone else datetime.now().astimezone()
        return f"Today's date is {today:%Y-%m-%d} ({today:%A})."

    return todays_date
