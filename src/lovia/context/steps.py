"""The default policy's steps over its position-keyed decisions (``Decisions``).

How a body entry is shown under the decisions, and the offload and clear steps that add
to them. Each step returns the body's new raw token estimate and how many entries it
changed.
"""

from __future__ import annotations

from ..transcript import InputEntry, ToolResultEntry
from ._render import Info, info_for, summary_entry
from .decisions import Decisions

__all__ = ["clear_oldest", "cleared_by_id", "head_infos", "last_user", "offload_huge", "shown_at"]


def shown_at(infos: list[Info], d: Decisions, i: int, recall: bool) -> Info:
    """The body entry at ``i`` as the view shows it under ``d``."""
    info = infos[i]
    if info.is_result:
        if i < d.cleared_upto or (d.cleared_ids and cleared_by_id(info, d)):
            return info.cleared(recall)
        offloaded = d.offloaded.get(str(i)) if d.offloaded else None
        if offloaded is not None and offloaded == info.digest_if_huge():
            return info.preview(recall)
    return info


def cleared_by_id(info: Info, d: Decisions) -> bool:
    entry = info.entry
    return isinstance(entry, ToolResultEntry) and entry.call_id in d.cleared_ids


def offload_huge(
    infos: list[Info],
    d: Decisions,
    prot: int,
    raw: int,
    recall: bool,
    start: int | None = None,
    over: float = 0.0,
) -> tuple[int, int]:
    """Show the huge results in ``[start, prot)`` costing more than ``over`` as previews."""
    n = 0
    first = max(d.cleared_upto, d.summary_upto) if start is None else start
    for i in range(first, prot):
        info = infos[i]
        key = str(i)
        if info.is_result and info.tokens > over and key not in d.offloaded:
            if info.digest_if_huge() is None or shown_at(infos, d, i, recall) is not info:
                continue
            preview = info.preview(recall)
            d.offloaded = {**d.offloaded, key: info.digest()}
            raw -= info.tokens - preview.tokens
            n += 1
    return raw, n


def clear_oldest(
    infos: list[Info], d: Decisions, prot: int, raw: int, goal: float, recall: bool
) -> tuple[int, int]:
    n = 0
    i = max(d.cleared_upto, d.summary_upto)
    while i < prot and raw > goal:
        info = infos[i]
        marker = info.cleared(recall) if info.is_result else info
        if marker is not info and not cleared_by_id(
            info, d
        ):  # outputs shorter than a marker are shown as they are
            shown = info.preview(recall) if str(i) in d.offloaded else info
            raw -= shown.tokens - marker.tokens
            n += 1
        i += 1
    d.cleared_upto = max(d.cleared_upto, i)
    return raw, n


def last_user(infos: list[Info], start: int, stop: int) -> int:
    """The position of the latest user message in ``[start, stop)``, or -1."""
    for i in range(stop - 1, start - 1, -1):
        e = infos[i].entry
        if isinstance(e, InputEntry) and e.role == "user":
            return i
    return -1


def head_infos(infos: list[Info], d: Decisions) -> list[Info]:
    """What stands for the summarized span: the summary, then the kept user message."""
    if not d.summary_upto:
        return []
    head = [info_for(summary_entry(d.summary))]
    if 0 <= d.summary_kept < d.summary_upto:
        head.append(infos[d.summary_kept])
    return head
