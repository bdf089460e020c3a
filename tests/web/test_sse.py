"""SSE frames round-trip lovia events (event -> frame -> event)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lovia.web.sse import decode_sse, encode_comment, encode_sse

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=10**6),
            st.dictionaries(st.text(), json_values, max_size=4),
            st.text(min_size=1),
        ),
        max_size=5,
    )
)
def test_frames_decode_to_the_events_that_were_encoded(
    items: list[tuple[int, dict[str, Any], str]],
) -> None:
    body = b""
    expected = []
    for seq, payload, kind in items:
        event = {**payload, "type": kind}
        body += encode_comment("keep-alive\nline") + encode_sse(seq, event)
        expected.append((seq, event))
    assert decode_sse(body.decode()) == expected
