"""Content parts: text, images and files inside a message or a tool result.

A message's ``content`` is either a plain string or a list of parts. Parts are small
dataclasses (``TextPart("hi")`` works positionally); binary payloads travel as base64 text so
every store and wire format can carry them unchanged. Providers translate parts into their
own wire shapes; everything else only needs ``text_of`` / ``project_parts``.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union

from .errors import UserError

__all__ = [
    "IMAGE_MIME_BY_SUFFIX",
    "MAX_PART_BYTES",
    "ContentPart",
    "FilePart",
    "ImagePart",
    "InvalidContent",
    "TextPart",
    "coerce_parts",
    "decoded_size",
    "image_mime",
    "normalize_content",
    "part_from_dict",
    "part_to_dict",
    "project_parts",
    "sniff_image_mime",
    "text_of",
]

MAX_PART_BYTES = 20 * 1024 * 1024
"""The largest binary part ``from_path`` / ``from_bytes`` accept (decoded bytes)."""

IMAGE_MIME_BY_SUFFIX: dict[str, str] = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}


class InvalidContent(UserError, ValueError):
    """A content part is malformed (both or neither of url/data, bad base64, too large).

    It is a ``ValueError`` too, so code written against lovia 0.9.119 keeps catching it.
    """


@dataclass
class TextPart:
    """Plain text."""

    text: str
    type: Literal["text"] = "text"


@dataclass
class ImagePart:
    """An image, by ``url`` or inline as base64 ``data`` with its ``mime_type``."""

    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    detail: Literal["auto", "low", "high"] | None = None
    type: Literal["image"] = "image"

    def __post_init__(self) -> None:
        _check_source("ImagePart", self.url, self.data, self.mime_type)

    @classmethod
    def from_path(cls, path: str | Path, *, mime_type: str | None = None) -> ImagePart:
        """Read an image file and embed it. Its type is what its first bytes say (PNG, JPEG,
        GIF, WebP), else what its suffix says; ``mime_type`` overrides both."""
        p = Path(path)
        raw = _read_bytes(p)
        mime = mime_type or sniff_image_mime(raw) or image_mime(p)
        if mime is None:
            raise InvalidContent(
                f"cannot infer mime_type for {p.suffix or p.name!r}: an unknown image suffix, "
                "and the content is not PNG, JPEG, GIF or WebP",
                hint="pass mime_type='image/png' (or jpeg, gif, webp)",
            )
        return cls(data=base64.b64encode(raw).decode("ascii"), mime_type=mime)

    @classmethod
    def from_bytes(cls, data: bytes, *, mime_type: str | None = None) -> ImagePart:
        """Embed image bytes you already hold; without ``mime_type``, the type their first
        bytes say (PNG, JPEG, GIF, WebP)."""
        _check_size(len(data), "image")
        mime = mime_type or sniff_image_mime(data)
        if mime is None:
            raise InvalidContent(
                "cannot tell the image type: the bytes are not PNG, JPEG, GIF or WebP",
                hint="pass mime_type='image/png' (or the image's type)",
            )
        return cls(data=base64.b64encode(data).decode("ascii"), mime_type=mime)


@dataclass
class FilePart:
    """A document (PDF, text, ...), by ``url`` or inline as base64 ``data``."""

    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    filename: str | None = None
    type: Literal["file"] = "file"

    def __post_init__(self) -> None:
        _check_source("FilePart", self.url, self.data, self.mime_type)
        if self.data is not None:
            try:
                base64.b64decode(self.data, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise InvalidContent(
                    "FilePart data is not valid base64",
                    hint="pass the file's bytes through FilePart.from_bytes(...)",
                ) from exc

    @classmethod
    def from_path(
        cls, path: str | Path, *, mime_type: str | None = None, filename: str | None = None
    ) -> FilePart:
        """Read a file and embed it; the MIME type is guessed from the suffix."""
        p = Path(path)
        mime = mime_type or mimetypes.guess_type(p.name)[0]
        if mime is None:
            raise InvalidContent(
                f"cannot tell the file type of {p.name!r} from its suffix",
                hint="pass mime_type='application/pdf' (or the file's type)",
            )
        return cls(data=_read_base64(p), mime_type=mime, filename=filename or p.name)

    @classmethod
    def from_bytes(cls, data: bytes, *, mime_type: str, filename: str | None = None) -> FilePart:
        """Embed bytes you already hold."""
        _check_size(len(data), "file")
        encoded = base64.b64encode(data).decode("ascii")
        return cls(data=encoded, mime_type=mime_type, filename=filename)

    @classmethod
    def from_base64(cls, data: str, *, mime_type: str, filename: str | None = None) -> FilePart:
        """Wrap data that is already base64 text."""
        return cls(data=data, mime_type=mime_type, filename=filename)

    @classmethod
    def from_url(
        cls, url: str, *, mime_type: str | None = None, filename: str | None = None
    ) -> FilePart:
        """Refer to a file the provider fetches itself (lovia does not download it)."""
        return cls(url=url, mime_type=mime_type, filename=filename)


ContentPart = Union[TextPart, ImagePart, FilePart]  # noqa: UP007
_PART_TYPES = (TextPart, ImagePart, FilePart)


def _check_source(kind: str, url: str | None, data: str | None, mime_type: str | None) -> None:
    if (url is None) == (data is None):
        raise InvalidContent(
            f"{kind} needs exactly one of url or data",
            hint=f"{kind}(url='https://...') or {kind}.from_path('file')",
        )
    if data is not None and not mime_type:
        raise InvalidContent(
            f"{kind} with inline data needs a mime_type", hint="pass mime_type='image/png'"
        )


def _check_size(n: int, what: str) -> None:
    if n > MAX_PART_BYTES:
        raise InvalidContent(
            f"the {what} is {n:,} bytes; inline parts are limited to {MAX_PART_BYTES:,} bytes",
            hint="pass a URL the provider can fetch instead of inline data",
        )


def _read_bytes(path: Path) -> bytes:
    try:
        _check_size(path.stat().st_size, "file")
        return path.read_bytes()
    except OSError as exc:
        raise InvalidContent(
            f"cannot read {str(path)!r}: {exc.strerror}",
            hint=f"check the path (relative paths start at the current directory: {Path.cwd()})",
        ) from exc


def _read_base64(path: Path) -> str:
    return base64.b64encode(_read_bytes(path)).decode("ascii")


def sniff_image_mime(head: bytes) -> str | None:
    """The image type the first bytes of ``head`` say (PNG, JPEG, GIF or WebP), or None."""
    for signature, mime in _SIGNATURES:
        if head.startswith(signature):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime(path: str | Path) -> str | None:
    """The image MIME type every built-in provider accepts for ``path``'s suffix, or None."""
    return IMAGE_MIME_BY_SUFFIX.get(Path(path).suffix.lower().lstrip("."))


def decoded_size(data: str) -> int:
    """How many bytes base64 text ``data`` decodes to (without decoding it)."""
    if not data:
        return 0
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def normalize_content(content: Any) -> str | list[ContentPart] | None:
    """``content`` as ``str``, a list of parts, or ``None`` (one part becomes a list)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, _PART_TYPES):
        return [content]
    return [_as_part(p) for p in content]


def _as_part(value: Any) -> ContentPart:
    if isinstance(value, _PART_TYPES):
        return value
    if isinstance(value, str):
        return TextPart(value)
    if isinstance(value, dict):
        return part_from_dict(value)
    raise InvalidContent(
        f"cannot use {type(value).__name__} as message content",
        hint="use a str, TextPart, ImagePart or FilePart",
    )


def text_of(content: str | Sequence[ContentPart] | None) -> str:
    """The text of ``content``; images and files show as short placeholders."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out: list[str] = []
    for part in content:
        if isinstance(part, TextPart):
            out.append(part.text)
        elif isinstance(part, ImagePart):
            out.append("[image]")
        elif isinstance(part, FilePart):
            out.append(f"[file:{part.filename}]" if part.filename else "[file]")
    return "".join(out)


def coerce_parts(value: object) -> list[ContentPart] | None:
    """A tool's return value as parts when it is part-shaped (one part, or a list mixing
    strings and parts with at least one part); ``None`` for any other value."""
    if isinstance(value, _PART_TYPES):
        return [value]
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Sequence):
        return None
    items = list(value)
    if not any(isinstance(i, _PART_TYPES) for i in items):
        return None
    if not all(isinstance(i, (str, *_PART_TYPES)) for i in items):
        return None
    return [TextPart(i) if isinstance(i, str) else i for i in items]


def project_parts(parts: Sequence[ContentPart]) -> str:
    """Parts as text for places that cannot carry binaries: text verbatim, one bracketed line
    per image or file naming its URL, or its type and size."""
    lines: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                lines.append(part.text)
            continue
        label = "image" if isinstance(part, ImagePart) else "file"
        if isinstance(part, FilePart) and part.filename:
            label = f"file {part.filename}"
        if part.url is not None:
            lines.append(f"[{label}: {part.url}]")
        else:
            lines.append(f"[{label}: {part.mime_type}, {_human(decoded_size(part.data or ''))}]")
    return "\n".join(lines)


def _human(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} B"


def part_to_dict(part: ContentPart) -> dict[str, Any]:
    """A JSON-safe dict for ``part`` (``part_from_dict`` reverses it)."""
    if isinstance(part, TextPart):
        return {"text": part.text, "type": "text"}
    if isinstance(part, ImagePart):
        return {
            "url": part.url,
            "data": part.data,
            "mime_type": part.mime_type,
            "detail": part.detail,
            "type": "image",
        }
    return {
        "url": part.url,
        "data": part.data,
        "mime_type": part.mime_type,
        "filename": part.filename,
        "type": "file",
    }


def part_from_dict(data: dict[str, Any]) -> ContentPart:
    """Rebuild a part from ``part_to_dict`` output (unknown keys are ignored)."""
    kind = data.get("type")
    if kind == "text":
        return TextPart(text=str(data.get("text", "")))
    if kind == "image":
        return ImagePart(
            url=data.get("url"),
            data=data.get("data"),
            mime_type=data.get("mime_type"),
            detail=data.get("detail"),
        )
    if kind == "file":
        return FilePart(
            url=data.get("url"),
            data=data.get("data"),
            mime_type=data.get("mime_type"),
            filename=data.get("filename"),
        )
    raise InvalidContent(
        f"unknown content part type {kind!r}", hint="parts have type 'text', 'image' or 'file'"
    )
