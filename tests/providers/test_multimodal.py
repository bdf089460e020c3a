"""Images and files through both wire protocols, against real HTTP servers on 127.0.0.1.

User input carries parts as the run's input; a tool result carries them in ``parts`` (given
here as run input entries, the way a resumed or replayed history brings them back).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from lovia import (
    Agent,
    AnthropicProvider,
    FilePart,
    ImagePart,
    InputEntry,
    OpenAIChatProvider,
    Runner,
    TextPart,
    ToolCallEntry,
    ToolResultEntry,
    UserError,
)
from lovia.messages import user

from .dialects import ANTHROPIC, OPENAI
from .server import ProtocolServer

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"
B64_PNG = base64.b64encode(PNG).decode()
B64_PDF = base64.b64encode(PDF).decode()
FILE_LINE = f"[file report.pdf: application/pdf, {len(PDF)} B]"


def looked_at_a_chart() -> list[Any]:
    """A history in which a tool returned an image and a file next to its text."""
    return [
        InputEntry(content="Plot the sales."),
        ToolCallEntry(call_id="c1", name="plot", arguments="{}"),
        ToolResultEntry(
            call_id="c1",
            output=f"the chart\n[image: image/png, {len(PNG)} B]\n{FILE_LINE}",
            parts=[
                TextPart("the chart"),
                ImagePart.from_bytes(PNG, mime_type="image/png"),
                FilePart.from_bytes(PDF, mime_type="application/pdf", filename="report.pdf"),
            ],
        ),
    ]


# -- OpenAI-compatible Chat Completions -------------------------------------------------------


async def test_openai_user_parts_become_image_url_and_file_content_parts(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(OPENAI.text("A chart and a report."))
    question = user(
        [
            TextPart("What are these?"),
            ImagePart(url="https://example.com/chart.png", detail="low"),
            ImagePart.from_bytes(PNG, mime_type="image/png"),
            FilePart.from_bytes(PDF, mime_type="application/pdf", filename="report.pdf"),
        ]
    )

    result = await Runner.run(Agent("a", model=openai_model), [question])

    assert result.output == "A chart and a report."
    assert server.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What are these?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://example.com/chart.png", "detail": "low"},
                },
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
                {
                    "type": "file",
                    "file": {
                        "file_data": f"data:application/pdf;base64,{B64_PDF}",
                        "filename": "report.pdf",
                    },
                },
            ],
        }
    ]


async def test_openai_tool_result_images_follow_the_tool_messages_on_a_vision_model(
    server: ProtocolServer,
) -> None:
    server.add(OPENAI.text("Sales went up."))
    async with OpenAIChatProvider(
        "m", base_url=f"{server.url}/v1", api_key="k", supports_vision=True
    ) as model:
        await Runner.run(Agent("a", model=model), looked_at_a_chart())

    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[2]["content"].startswith(f"the chart\n[image: image/png, {len(PNG)} B]")
    assert messages[3]["content"] == [
        {"type": "text", "text": "[image from tool result c1:]"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
    ]


async def test_openai_text_only_server_reads_the_results_text_alone(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(OPENAI.text("ok"))
    assert openai_model.supports_vision is False  # not api.openai.com: assumed text-only

    await Runner.run(Agent("a", model=openai_model), looked_at_a_chart())

    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[2]["content"] == looked_at_a_chart()[2].output


async def test_openai_file_by_url_is_refused_before_any_request(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    question = user([TextPart("Summarize"), FilePart.from_url("https://example.com/a.pdf")])

    with pytest.raises(UserError) as info:
        await Runner.run(Agent("a", model=openai_model), [question])

    assert "URL" in info.value.message
    assert info.value.hint is not None and "FilePart.from_path" in info.value.hint
    assert server.requests == []


# -- Anthropic Messages -----------------------------------------------------------------------


async def test_anthropic_user_parts_become_image_and_document_blocks(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(ANTHROPIC.text("Noted."))
    question = user(
        [
            TextPart("Read these."),
            ImagePart(url="https://example.com/chart.png"),
            ImagePart.from_bytes(PNG, mime_type="image/png"),
            FilePart.from_bytes(PDF, mime_type="application/pdf", filename="report.pdf"),
            FilePart.from_url("https://example.com/spec.pdf"),
            FilePart.from_bytes(b"hello, notes", mime_type="text/plain"),
        ]
    )

    result = await Runner.run(Agent("a", model=anthropic_model), [question])

    assert result.output == "Noted."
    assert server.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Read these."},
                {
                    "type": "image",
                    "source": {"type": "url", "url": "https://example.com/chart.png"},
                },
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG},
                },
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": B64_PDF},
                    "title": "report.pdf",
                },
                {
                    "type": "document",
                    "source": {"type": "url", "url": "https://example.com/spec.pdf"},
                },
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "hello, notes"},
                },
            ],
        }
    ]


async def test_anthropic_tool_result_carries_text_and_image_blocks(
    server: ProtocolServer,
) -> None:
    server.add(ANTHROPIC.text("Sales went up."))
    seeing = AnthropicProvider("claude-test", base_url=server.url, supports_vision=True)

    async with seeing:
        await Runner.run(Agent("a", model=seeing), looked_at_a_chart())

    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": [
                {"type": "text", "text": "the chart"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG},
                },
                # a tool_result holds text and images only: the file is described in text
                {"type": "text", "text": FILE_LINE},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("part", "words"),
    [
        (ImagePart(data="A" * (7 * 1024 * 1024), mime_type="image/png"), "5 MB"),
        (ImagePart.from_bytes(b"BM" + bytes(64), mime_type="image/bmp"), "image/bmp"),
        (FilePart.from_bytes(b"a,b", mime_type="text/csv"), "text/csv"),
        (FilePart.from_url("https://example.com/a.docx", mime_type="application/msword"), "PDF"),
    ],
    ids=["image-over-5-MB", "bmp-image", "csv-file", "word-url"],
)
async def test_anthropic_refuses_what_the_api_would_reject_before_any_request(
    server: ProtocolServer, anthropic_model: AnthropicProvider, part: Any, words: str
) -> None:
    with pytest.raises(UserError) as info:
        await Runner.run(Agent("a", model=anthropic_model), [user([TextPart("look"), part])])

    assert words in info.value.message
    assert info.value.hint
    assert server.requests == []


async def test_openai_refuses_an_inline_image_over_its_limit(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    huge = ImagePart(data="A" * (28 * 1024 * 1024), mime_type="image/png")  # 21 MB decoded

    with pytest.raises(UserError) as info:
        await Runner.run(Agent("a", model=openai_model), [user([huge])])

    assert "20 MB" in info.value.message and "url" in (info.value.hint or "")
    assert server.requests == []


async def test_a_long_conversation_with_an_image_sends_it_on_every_turn(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    """The image stays in the view on later turns (rendered once, sent each time)."""
    server.add(ANTHROPIC.tool_call("c9", "noop", "{}"), ANTHROPIC.text("done"))
    from lovia import tool

    @tool
    def noop() -> str:
        """Do nothing."""
        return "nothing"

    image = ImagePart.from_bytes(PNG, mime_type="image/png")
    await Runner.run(
        Agent("a", model=anthropic_model, tools=[noop]), [user([TextPart("see"), image])]
    )

    first, second = (r.body["messages"] for r in server.requests)
    assert second[0] == first[0]
    assert second[0]["content"][1]["source"]["data"] == B64_PNG
    assert [m["role"] for m in second] == ["user", "assistant", "user"]


async def test_anthropic_compatible_server_gets_the_text_of_a_tool_results_images(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    # Another host than Anthropic's may run a text-only model: by default the image a tool
    # returned goes as the result's text, which names it.
    server.add(ANTHROPIC.text("Sales went up."))

    await Runner.run(Agent("a", model=anthropic_model), looked_at_a_chart())

    assert anthropic_model.supports_vision is False
    result = server.requests[0].body["messages"][2]["content"][0]
    assert result["type"] == "tool_result"
    assert result["content"] == f"the chart\n[image: image/png, 72 B]\n{FILE_LINE}"
