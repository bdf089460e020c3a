"""``show_chart``: an interactive chart (an Apache ECharts option) in the chat, and
``validate_chart_option``, the same checks for a tool of your own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from ..errors import ToolError
from ..tools import tool
from .components import check_json_size, ui_result

__all__ = ["MAX_OPTION_BYTES", "SERIES_TYPES", "show_chart", "validate_chart_option"]

SERIES_TYPES = frozenset(
    "line bar pie scatter effectScatter radar tree treemap sunburst boxplot candlestick "
    "heatmap parallel funnel gauge sankey graph themeRiver".split()
)
"""The ECharts series types the page draws."""
MAX_OPTION_BYTES = 64 * 1024


def validate_chart_option(option: Mapping[str, Any]) -> None:
    """A ``ToolError`` with a hint (the model can fix the option and try again) unless the
    page can draw ``option``: at least one series, each of a type in ``SERIES_TYPES``,
    JSON of at most 64 KiB."""
    series = option.get("series") if isinstance(option, Mapping) else None
    items = [series] if isinstance(series, dict) else series
    if not isinstance(items, list) or not items:
        raise ToolError(
            "option.series is missing or empty",
            hint='give at least one series, e.g. "series": [{"type": "bar"}]',
        )
    for n, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in SERIES_TYPES:
            raise ToolError(
                f"option.series[{n}].type {kind!r} is not supported",
                hint="use one of: " + ", ".join(sorted(SERIES_TYPES)),
            )
    check_json_size(
        option, what="option", limit=MAX_OPTION_BYTES, hint="aggregate or sample the data"
    )


@tool
def show_chart(
    option: Annotated[dict[str, Any], "An Apache ECharts option object (plain JSON)."],
) -> str:
    """Show the user a chart drawn from an Apache ECharts option, when numbers compare or
    trend better as a picture. Put the data in `dataset.source` rows, e.g.
    {"dataset": {"source": [["month", "sales"], ["Jan", 120], ["Feb", 132]]},
    "xAxis": {"type": "category"}, "yAxis": {}, "series": [{"type": "bar"}]}.
    Comment on what stands out rather than repeating the numbers."""
    validate_chart_option(option)
    return ui_result("chart", from_args="option")
