"""What an OpenAI-compatible server is sent for histories 0.9.119 already shaped: adjacent user
entries as one message (chat templates that need the roles to alternate refuse two in a row),
and only this provider's own reasoning sent back."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lovia import (
    Agent,
    AssistantTextEntry,
    FilePart,
    ImagePart,
    InputEntry,
    OpenAIChatProvider,
    ReasoningEntry,
    Runner,
    TextPart,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UserError,
)
from lovia.messages import Message
from lovia.providers.openai import to_chat_messages
from lovia.providers.openai_chat import entries_to_openai_messages, message_to_openai

from .server import ProtocolServer, Reply, openai_text_stream
from .test_wire_properties import conversations, fresh


async def test_a_summary_then_a_question_go_out_as_one_user_message(
    server: ProtocolServer,
) -> None:
    server.add(Reply(events=openai_text_stream("Kyoto.")))
    history: list[TranscriptEntry] = [
        InputEntry(role="user", content="hi"),
        ReasoningEntry(content="claude thought", provider="anthropic", metadata={"signature": "s"}),
        ReasoningEntry(content="my thought", provider="openai-chat"),
        AssistantTextEntry(content="hello"),
        InputEntry(role="user", content="Earlier, in short: we booked Kyoto."),
        InputEntry(role="user", content="What did we book?"),
    ]
    async with OpenAIChatProvider(
        "m", base_url=f"{server.url}/v1", api_key="k", send_reasoning=True
    ) as model:
        result = await Runner.run(Agent("a", instructions="Be brief.", model=model), history)
    assert result.output == "Kyoto."
    assert server.requests[0].body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "reasoning_content": "my thought"},
        {
            "role": "user",
            "content": "Earlier, in short: we booked Kyoto.\n\nWhat did we book?",
        },
    ]


def test_result_images_and_the_next_question_share_one_user_message() -> None:
    image = ImagePart(data="YQ==", mime_type="image/png")
    out = entries_to_openai_messages(
        [
            ToolCallEntry(call_id="c1", name="look", arguments="{}"),
            ToolResultEntry(call_id="c1", output="a.png", parts=[image]),
            InputEntry(role="user", content="and now?"),
        ],
        include_images=True,
    )
    assert [m["role"] for m in out] == ["assistant", "tool", "user"]
    assert out[2]["content"][-2:] == [
        {"type": "text", "text": "\n\n"},
        {"type": "text", "text": "and now?"},
    ]
    mine = ReasoningEntry(content="r", provider="deepseek")
    turn = [InputEntry(role="user", content="q"), mine, AssistantTextEntry(content="a")]
    assert "reasoning_content" not in entries_to_openai_messages(turn)[1]
    assert entries_to_openai_messages(turn, reasoning_provider="deepseek")[1] == {
        "role": "assistant",
        "content": "a",
        "reasoning_content": "r",
    }


def test_a_file_by_url_is_refused_in_0_9_119s_words() -> None:
    with pytest.raises(UserError, match="does not support FilePart URL"):
        entries_to_openai_messages(
            [InputEntry(role="user", content=[FilePart(url="https://x.test/a.pdf")])]
        )


@settings(max_examples=100, deadline=None)
@given(conversations(), st.data())
def test_merged_user_messages_render_the_same_from_the_cache(
    entries: list[TranscriptEntry], data: st.DataObject
) -> None:
    view: list[TranscriptEntry] = []
    for entry in entries:
        view.append(entry)
        if isinstance(entry, InputEntry) and entry.role == "user" and data.draw(st.booleans()):
            view.append(InputEntry(role="user", content="and also"))
    grown: list[TranscriptEntry] = []
    for entry in view:
        grown.append(entry)
        got = to_chat_messages(grown)
        assert got == to_chat_messages(fresh(grown))
        roles = [m["role"] for m in got]
        assert all(a != "user" or b != "user" for a, b in itertools.pairwise(roles))


def test_message_to_openai_keeps_an_assistant_messages_content_as_given() -> None:
    picture = ImagePart(url="https://x.test/p.png")
    assert message_to_openai(Message(role="assistant", content=[TextPart("see"), picture])) == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": "https://x.test/p.png"}},
        ],
    }
    assert message_to_openai(Message(role="assistant", content="")) == {
        "role": "assistant",
        "content": "",
    }
    assert message_to_openai(Message(role="assistant")) == {"role": "assistant"}


def test_a_question_after_a_turn_that_sends_nothing_is_not_repeated_from_the_cache() -> None:
    """A model turn of only reasoning this provider does not send back renders no message,
    so the next question joins the one before that turn; a later view of the same chat (long
    enough to be cached) sent that question twice: "U1\\n\\nU2\\n\\nU2"."""
    body: list[TranscriptEntry] = []
    for n in range(8):
        body += [InputEntry(role="user", content=f"q{n}"), AssistantTextEntry(content=f"a{n}")]
    body += [
        InputEntry(role="user", content="U1"),
        ReasoningEntry(content="thought", provider="anthropic"),
        InputEntry(role="user", content="U2"),
    ]
    assert to_chat_messages(body)[-1] == {"role": "user", "content": "U1\n\nU2"}
    grown = [*body, AssistantTextEntry(content="A2")]
    assert to_chat_messages(grown) == to_chat_messages(fresh(grown))
    assert to_chat_messages(grown)[-2:] == [
        {"role": "user", "content": "U1\n\nU2"},
        {"role": "assistant", "content": "A2"},
    ]
