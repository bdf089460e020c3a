"""``show_table``: an interactive table in the chat (sort, filter, copy, CSV)."""

from __future__ import annotations

from typing import Annotated

from ..errors import ToolError
from ..tools import tool
from .components import check_json_size, ui_result

__all__ = ["MAX_TABLE_BYTES", "show_table"]

MAX_TABLE_BYTES = 64 * 1024

Cell = str | int | float | bool | None


@tool
def show_table(
    columns: Annotated[list[str], "The column headings."],
    rows: Annotated[list[list[Cell]], "The rows, one value per column each."],
    title: Annotated[str | None, "A short heading."] = None,
) -> str:
    """Show the user a table they can sort and filter, for answers longer than a few rows
    (comparisons, rankings, records). Numbers go in as numbers. Comment on what stands out
    rather than repeating the table."""
    if not columns:
        raise ToolError("columns is empty", hint="name at least one column")
    for n, row in enumerate(rows):
        if len(row) != len(columns):
            raise ToolError(
                f"rows[{n}] has {len(row)} values; there are {len(columns)} columns",
                hint="give each row one value per column (null for a missing one)",
            )
    check_json_size(
        {"columns": columns, "rows": rows, "title": title},
        what="table",
        limit=MAX_TABLE_BYTES,
        hint="show fewer rows (the top ones, or totals) and say what was left out",
    )
    return ui_result("table", from_args=True)
