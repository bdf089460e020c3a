"""SSE frames of the chat streams: any event name, id and JSON data round-trips through a
frame, line breaks included; and lovia's run events become the chat API's events."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lovia.web.wire import encode, error_code, frames

from .conftest import decode

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
names = st.text(alphabet="abcxyz_:-09éü🦉", min_size=1, max_size=12)
keys = st.text(alphabet="ABCXYZ_é", max_size=6)


@given(
    st.lists(
        st.tuples(
            names,
            st.dictionaries(
                st.text().filter(lambda k: k not in ("event", "frame_id")), json_values, max_size=4
            ),
            names,
        ),
        max_size=5,
    )
)
def test_frames_decode_to_the_events_that_were_encoded(
    items: list[tuple[str, dict[str, Any], str]],
) -> None:
    body = b""
    expected = []
    for name, payload, frame_id in items:
        body += b": keep-alive\n\n" + encode(name, payload, frame_id)
        expected.append({"event": name, **payload, "frame_id": frame_id})
    assert decode(body.decode()) == expected


def test_a_line_break_cannot_start_a_frame_of_its_own() -> None:
    body = encode("text_delta\nevent: done", {"delta": "a\nb"}, "r\r\n1").decode()
    assert decode(body) == [
        {"event": "text_delta event: done", "delta": "a\nb", "frame_id": "r  1"}
    ]


def test_run_events_become_the_chat_api_events() -> None:
    call = {"id": "c1", "call_id": "c1", "name": "add", "arguments": '{"a": 1}'}
    assert list(frames({"type": "tool_call_started", "call": call})) == [
        ("tool_call", {"id": "c1", "name": "add", "arguments": '{"a": 1}'})
    ]
    done = {"type": "tool_call_completed", "call": call, "output": "2", "is_error": False}
    assert list(frames(done)) == [
        ("tool_result", {"id": "c1", "name": "add", "result": "2", "is_error": False})
    ]
    result = {"output": "hi", "entries": [{"type": "input", "role": "user"}], "usage": {}}
    ended = [name for name, _ in frames({"type": "run_completed", "result": result}, "r1")]
    assert ended == ["refs", "done"]
    assert list(frames({"type": "run_started", "run_id": "r1"})) == []
    failed = dict(frames({"type": "run_failed", "error": {"type": "RunCancelled"}}, "r1"))
    assert failed["error"]["code"] == "cancelled"


def test_error_codes_follow_the_provider_status() -> None:
    assert error_code({"type": "ProviderError", "status_code": 401}) == "provider_auth"
    assert error_code({"type": "ProviderError", "status_code": 429}) == "rate_limited"
    assert error_code({"type": "ProviderError", "status_code": 529}) == "overloaded"
    assert error_code({"type": "ProviderError", "status_code": 500}) == "provider_error"
    assert error_code({"type": "MaxTurnsExceeded"}) == "max_turns"
    assert error_code({"type": "KeyError"}) == "internal"
