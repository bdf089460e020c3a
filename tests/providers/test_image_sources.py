"""Images from files, bytes and URLs, as a user builds them, reach both wire protocols with the
media type their bytes have; what an API would refuse fails before any request, with a hint."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, FilePart, ImagePart, InputEntry, Provider, Runner, TextPart, UserError
from lovia.messages import user
from lovia.parts import InvalidContent

from .dialects import OPENAI, Dialect
from .server import ProtocolServer

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + bytes(40)
GIF = b"GIF89a" + bytes(40)
WEBP = b"RIFF\x20\x00\x00\x00WEBPVP8 " + bytes(40)
B64_JPEG = base64.b64encode(JPEG).decode()


def sent_images(dialect: Dialect, server: ProtocolServer) -> list[tuple[str, str]]:
    """(media type, base64 data) of each inline image in the last request's user message."""
    (message,) = [m for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    out = []
    for block in message["content"]:
        if dialect.name == "anthropic" and block["type"] == "image":
            source = block["source"]
            if source["type"] == "url":
                out.append(("url", source["url"]))
            else:
                out.append((source["media_type"], source["data"]))
        elif block["type"] == "image_url":
            url = block["image_url"]["url"]
            if url.startswith("data:"):
                meta, data = url[5:].split(",", 1)
                out.append((meta.split(";")[0], data))
            else:
                out.append(("url", url))
    return out


async def ask(model: Provider, *parts: Any) -> None:
    question = user([TextPart("What is this?"), *parts])
    await Runner.run(Agent("a", model=model, retry=None), [question])


async def test_the_media_type_is_what_the_bytes_are_not_what_the_name_says(
    tmp_path: Path, server: ProtocolServer, dialect: Dialect, model: Provider
) -> None:
    (tmp_path / "photo.png").write_bytes(JPEG)  # a JPEG someone saved as .png
    (tmp_path / "scan").write_bytes(GIF)  # no suffix at all
    server.add(dialect.text("a photo"))

    await ask(
        model,
        ImagePart.from_path(tmp_path / "photo.png"),
        ImagePart.from_path(tmp_path / "scan"),
        ImagePart.from_bytes(WEBP),  # no mime_type: the bytes say it
        ImagePart(data=B64_JPEG, mime_type="image/png"),  # declared wrongly (an MCP server, say)
        ImagePart(data=B64_JPEG, mime_type="image/jpg"),  # a common misspelling
    )

    assert [mime for mime, _ in sent_images(dialect, server)] == [
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/jpeg",
        "image/jpeg",
    ]
    assert sent_images(dialect, server)[0][1] == B64_JPEG


async def test_a_data_url_is_sent_as_data_and_line_breaks_in_base64_are_dropped(
    server: ProtocolServer, dialect: Dialect, model: Provider
) -> None:
    server.add(dialect.text("a photo"))
    wrapped = "\n".join(B64_JPEG[i : i + 20] for i in range(0, len(B64_JPEG), 20))

    await ask(
        model,
        ImagePart(url=f"data:image/jpeg;base64,{B64_JPEG}"),
        ImagePart(data=wrapped, mime_type="image/jpeg"),
        ImagePart(url="https://example.com/cat.jpg"),
    )

    images = sent_images(dialect, server)
    assert images[0] == ("image/jpeg", B64_JPEG)  # Anthropic's url source takes http(s) only
    assert images[1] == ("image/jpeg", B64_JPEG)
    assert images[2] == ("url", "https://example.com/cat.jpg")


@pytest.mark.parametrize(
    ("part", "words", "hint"),
    [
        (ImagePart(url="charts/sales.png"), "not an http(s)", "ImagePart.from_path"),
        (ImagePart(url="file:///tmp/sales.png"), "not an http(s)", "ImagePart.from_path"),
        (ImagePart(data="not base64!", mime_type="image/png"), "not valid base64", "from_path"),
        (ImagePart(url="data:image/png,rawtext"), "base64", "from_path"),
    ],
    ids=["relative-path", "file-url", "bad-base64", "data-url-without-base64"],
)
async def test_an_image_the_api_cannot_read_fails_before_any_request(
    server: ProtocolServer, model: Provider, part: ImagePart, words: str, hint: str
) -> None:
    with pytest.raises(UserError) as info:
        await ask(model, part)

    assert words in info.value.message
    assert hint in (info.value.hint or "")
    assert server.requests == []


def test_building_an_image_says_what_is_wrong_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(b"just text")
    with pytest.raises(InvalidContent) as unknown:
        ImagePart.from_path(tmp_path / "notes.txt")
    assert "mime_type=" in (unknown.value.hint or "")
    with pytest.raises(InvalidContent) as raw:
        ImagePart.from_bytes(b"just text")
    assert "mime_type=" in (raw.value.hint or "")
    with pytest.raises(InvalidContent) as missing:
        ImagePart.from_path(tmp_path / "absent.png")
    assert "absent.png" in missing.value.message and missing.value.hint
    # an explicit type is kept on the part (the provider still sends what the bytes are)
    assert ImagePart.from_path(tmp_path / "notes.txt", mime_type="image/png").mime_type == (
        "image/png"
    )


async def test_an_image_in_history_given_as_entries_is_sent_with_its_real_type(
    server: ProtocolServer, dialect: Dialect, model: Provider
) -> None:
    server.add(dialect.text("first"))
    history = [InputEntry(content=[TextPart("look"), ImagePart(data=B64_JPEG, mime_type="x")])]
    await Runner.run(Agent("a", model=model, retry=None), history)
    assert [m for m, _ in sent_images(dialect, server)] == ["image/jpeg"]


async def test_a_text_file_reaches_chat_completions_as_text_which_it_reads(
    server: ProtocolServer,
) -> None:
    """Chat Completions takes only PDFs as file parts: a text, CSV or JSON file goes as a text
    part naming the file; a PDF still goes as a file."""
    server.add(OPENAI.text("read"))
    pdf = FilePart.from_bytes(b"%PDF-1.4\n%%EOF\n", mime_type="application/pdf", filename="a.pdf")

    await ask(
        OPENAI.provider(server),
        FilePart.from_bytes("naïve,1\n".encode(), mime_type="text/csv", filename="rows.csv"),
        FilePart.from_bytes(b'{"a": 1}', mime_type="application/json"),
        pdf,
    )

    (message,) = [m for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    assert message["content"][1:] == [
        {
            "type": "text",
            "text": "--- file rows.csv (text/csv) ---\nnaïve,1\n\n--- end of file rows.csv ---",
        },
        {
            "type": "text",
            "text": '--- file (application/json) ---\n{"a": 1}\n--- end of file ---',
        },
        {
            "type": "file",
            "file": {"file_data": f"data:application/pdf;base64,{pdf.data}", "filename": "a.pdf"},
        },
    ]
