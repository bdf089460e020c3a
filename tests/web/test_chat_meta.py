"""A chat's row as the chat list serves it carries every field of ``ChatMeta`` (issue 30:
its dict is built by hand, so a field added later must be added there too)."""

from __future__ import annotations

import dataclasses

from lovia.web import ChatMeta


def test_to_dict_has_every_field_with_its_value() -> None:
    meta = ChatMeta(
        id="c1",
        title="a title",
        agent="bot",
        created_at=1.0,
        updated_at=2.0,
        pinned=True,
        parent_id="p",
        origin_kind="fork",
        origin_session_id="src",
        origin_ref="run:0",
    )
    assert meta.to_dict() == dataclasses.asdict(meta)
    assert list(meta.to_dict()) == [f.name for f in dataclasses.fields(ChatMeta)]
