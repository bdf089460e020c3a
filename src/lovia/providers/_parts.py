"""Content parts (text, images, files) in each provider's wire shape, with size checks.

Inline data is checked against the provider's own limit before any request, so a too-large
image is a ``UserError`` saying what to do instead of an HTTP 400 after the upload.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from ..errors import UserError
from ..parts import (
    ContentPart,
    FilePart,
    ImagePart,
    TextPart,
    decoded_size,
    project_parts,
    sniff_image_mime,
)

__all__ = [
    "ANTHROPIC_DOCUMENT_BYTES",
    "ANTHROPIC_IMAGE_BYTES",
    "ANTHROPIC_IMAGE_TYPES",
    "OPENAI_FILE_BYTES",
    "OPENAI_IMAGE_BYTES",
    "anthropic_blocks",
    "joined_content",
    "openai_content",
    "openai_result_images",
]

MB = 1024 * 1024
OPENAI_IMAGE_BYTES = 20 * MB
"""The largest inline image the OpenAI Chat Completions API takes."""
OPENAI_FILE_BYTES = 32 * MB
"""The largest inline file (``file_data``) sent to an OpenAI-compatible server."""
ANTHROPIC_IMAGE_BYTES = 5 * MB
"""The largest inline image the Anthropic Messages API takes."""
ANTHROPIC_DOCUMENT_BYTES = 32 * MB
"""The largest inline PDF the Anthropic Messages API takes (its whole-request limit)."""
ANTHROPIC_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _check_size(part: ImagePart | FilePart, limit: int, provider: str) -> None:
    if part.data is None:
        return
    size = decoded_size(part.data)
    if size > limit:
        what = "image" if isinstance(part, ImagePart) else "file"
        name = f" {part.filename!r}" if isinstance(part, FilePart) and part.filename else ""
        raise UserError(
            f"the {what}{name} is {size / MB:.1f} MB; {provider} accepts inline {what}s of up "
            f"to {limit // MB} MB",
            hint=f"make the {what} smaller (resize or compress it), or pass a URL the provider "
            f"can fetch ({'ImagePart' if what == 'image' else 'FilePart'}(url=...))",
        )


_MIME_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/x-png": "image/png"}
_WHITESPACE = str.maketrans("", "", " \t\r\n")


def _inline_image(part: ImagePart) -> ImagePart:
    """``part`` with its base64 checked (line breaks dropped) and its ``mime_type`` what the
    bytes say when they are PNG, JPEG, GIF or WebP: the APIs refuse an image whose declared
    type differs from its content (a JPEG saved as ``.png``) or that is not base64."""
    data = (part.data or "").translate(_WHITESPACE)
    try:
        head = base64.b64decode(data, validate=True)[:12] if data else b""
    except (binascii.Error, ValueError) as exc:
        raise UserError(
            f"an ImagePart's data is not valid base64 ({part.mime_type})",
            hint="build it with ImagePart.from_path(...) or ImagePart.from_bytes(...)",
        ) from exc
    mime = sniff_image_mime(head) or _MIME_ALIASES.get(part.mime_type or "", part.mime_type)
    return ImagePart(data=data, mime_type=mime, detail=part.detail)


def _image_url(url: str) -> str:
    """An image URL the APIs fetch: ``http(s)`` or a ``data:`` URL; a local path is refused
    with the way to embed it."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in ("http", "https", "data"):
        raise UserError(
            f"the image URL {url!r} is not an http(s) or data: URL, so the model's API cannot "
            "fetch it",
            hint=f"embed a local file with ImagePart.from_path({url!r})",
        )
    return url


def _from_data_url(url: str) -> ImagePart:
    """A ``data:<type>;base64,<data>`` URL as an inline image."""
    meta, _, data = url[len("data:") :].partition(",")
    mime, _, encoding = meta.partition(";")
    if encoding.lower() != "base64" or not data:
        raise UserError(
            "an image data: URL must hold base64 data (data:image/png;base64,...)",
            hint="build the image with ImagePart.from_path(...) or ImagePart.from_bytes(...)",
        )
    return _inline_image(ImagePart(data=data, mime_type=mime or "image/png"))


# -- OpenAI Chat Completions ------------------------------------------------------------------


def _openai_image(part: ImagePart) -> dict[str, Any]:
    if part.url is None or _image_url(part.url).lower().startswith("data:"):
        part = _from_data_url(part.url) if part.url is not None else _inline_image(part)
    _check_size(part, OPENAI_IMAGE_BYTES, "the OpenAI Chat Completions API")
    url = part.url if part.url is not None else f"data:{part.mime_type};base64,{part.data}"
    image: dict[str, Any] = {"url": url}
    if part.detail is not None:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def _openai_file(part: FilePart) -> dict[str, Any]:
    if part.url is not None:
        raise UserError(
            f"the OpenAI Chat Completions API does not support FilePart URLs ({part.url})",
            hint="embed the file with FilePart.from_path(...) or FilePart.from_bytes(...); an "
            "image by URL goes in ImagePart(url=...); Anthropic models fetch PDF URLs",
        )
    _check_size(part, OPENAI_FILE_BYTES, "an OpenAI-compatible server")
    text = _text_file(part)
    if text is not None:  # Chat Completions reads PDFs only as files: text goes as text
        name = f" {part.filename}" if part.filename else ""
        framed = f"--- file{name} ({part.mime_type}) ---\n{text}\n--- end of file{name} ---"
        return {"type": "text", "text": framed}
    file: dict[str, Any] = {"file_data": f"data:{part.mime_type};base64,{part.data}"}
    if part.filename is not None:
        file["filename"] = part.filename
    return {"type": "file", "file": file}


_TEXT_TYPES = ("application/json", "application/xml", "application/yaml", "application/x-yaml")


def _text_file(part: FilePart) -> str | None:
    """The text of an inline text file (``text/*``, JSON, XML, YAML) in UTF-8, else None."""
    mime = (part.mime_type or "").split(";")[0].strip().lower()
    if not (mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith("+json")):
        return None
    try:
        return base64.b64decode(part.data or "", validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None  # not UTF-8 text after all: sent as a file, as declared


def openai_content(content: str | Sequence[ContentPart]) -> str | list[dict[str, Any]]:
    """A message's ``content`` for Chat Completions: a string stays a string; parts become
    ``text`` / ``image_url`` / ``file`` content parts."""
    if isinstance(content, str):
        return content
    out: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            out.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            out.append(_openai_image(part))
        else:
            out.append(_openai_file(part))
    return out


def joined_content(
    first: str | list[dict[str, Any]], then: str | list[dict[str, Any]]
) -> str | list[dict[str, Any]]:
    """Two adjacent messages' ``content`` as one, a blank line between them: text stays text,
    else both become part lists. Servers whose chat templates need the roles to alternate
    refuse two user messages in a row (a summary then the next question, images then text).
    """
    if isinstance(first, str) and isinstance(then, str):
        return f"{first}\n\n{then}" if first and then else first or then
    a = [{"type": "text", "text": first}] if isinstance(first, str) else first
    b = [{"type": "text", "text": then}] if isinstance(then, str) else then
    return [*a, {"type": "text", "text": "\n\n"}, *b] if a and b else a or b


def openai_result_images(call_id: str, parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    """The images of a tool result as user content parts, each labelled with its call.

    A ``tool`` message carries text only, so these ride in a user message after the turn's
    tool messages; files stay in the result's text (``output``).
    """
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ImagePart):
            out.append({"type": "text", "text": f"[image from tool result {call_id}:]"})
            out.append(_openai_image(part))
    return out


# -- Anthropic Messages -----------------------------------------------------------------------


def _anthropic_image(part: ImagePart) -> dict[str, Any]:
    if part.url is not None and not _image_url(part.url).lower().startswith("data:"):
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    # the url source takes http(s) only: a data: URL goes as base64, like inline data
    part = _from_data_url(part.url) if part.url is not None else _inline_image(part)
    if part.mime_type not in ANTHROPIC_IMAGE_TYPES:
        raise UserError(
            f"Anthropic models take JPEG, PNG, GIF and WebP images, not {part.mime_type!r}",
            hint="convert the image to PNG or JPEG first",
        )
    _check_size(part, ANTHROPIC_IMAGE_BYTES, "the Anthropic Messages API")
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": part.mime_type, "data": part.data},
    }


def _anthropic_document(part: FilePart) -> dict[str, Any]:
    source: dict[str, Any]
    if part.url is not None:
        if part.mime_type not in (None, "application/pdf"):
            raise UserError(
                f"Anthropic models fetch PDF documents by URL, not {part.mime_type!r}",
                hint="pass a PDF URL, embed the file with FilePart.from_path(...), or send "
                "its text as a TextPart",
            )
        source = {"type": "url", "url": part.url}
    elif part.mime_type == "application/pdf":
        _check_size(part, ANTHROPIC_DOCUMENT_BYTES, "the Anthropic Messages API")
        source = {"type": "base64", "media_type": "application/pdf", "data": part.data}
    elif part.mime_type == "text/plain":
        _check_size(part, ANTHROPIC_DOCUMENT_BYTES, "the Anthropic Messages API")
        try:
            text = base64.b64decode(part.data or "", validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise UserError(
                "a text/plain FilePart for an Anthropic model must hold UTF-8 text",
                hint="send the text as a TextPart, or fix the file's encoding",
            ) from exc
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        raise UserError(
            f"Anthropic models read PDF and plain-text documents, not {part.mime_type!r}",
            hint="convert the document to PDF, or send its text as a TextPart",
        )
    block: dict[str, Any] = {"type": "document", "source": source}
    if part.filename is not None:
        block["title"] = part.filename
    return block


def anthropic_blocks(
    content: str | Sequence[ContentPart], *, in_tool_result: bool = False
) -> list[dict[str, Any]]:
    """Content blocks for ``content``; empty text makes no block (the API refuses those).

    A ``tool_result`` holds text and images only, so there a file becomes its one-line
    description (the same text the result's ``output`` has).
    """
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            if part.text:
                out.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            out.append(_anthropic_image(part))
        elif in_tool_result:
            out.append({"type": "text", "text": project_parts([part])})
        else:
            out.append(_anthropic_document(part))
    return out
