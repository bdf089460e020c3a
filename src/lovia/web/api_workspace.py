"""The file panel over an agent's workspace: ``/api/workspace`` (its name),
``/files`` (one directory level), ``/recent`` (newest files), ``/file`` (text, paged),
``/raw`` (bytes, for previews and downloads) and ``POST /upload`` (one file into
``uploads/``).

Reading follows the agent's own read access, never more: a path outside the root (``..``,
an absolute path, ``~``, a symbolic link that leads out) or one of its ``denied_paths`` is
403 ``path_denied``, whatever the agent's mode would ask a person. Nothing here writes but
an upload, and an upload only creates a new file under ``uploads/``.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Query, Request, UploadFile
from fastapi.responses import Response

from ..workspace._prompt import SCRATCH_DIR
from ..workspace.paths import ResolvedPath, resolve_path
from .errors import WebError

if TYPE_CHECKING:
    from ..agent import Agent
    from .deps import RouterDeps

__all__ = ["upload_limit", "workspace_routes"]

UPLOAD_DIR = "uploads"
DEFAULT_UPLOAD_MB = 25.0
RECENT_LIMIT = 50
RECENT_SCAN = 20_000
SNIFF_BYTES = 8192

# Never in Recent (regenerable or environment files); still listed and readable by name.
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "venv", ".venv", "env", ".git"})
_SKIP_SUFFIXES = (".pyc", ".pyo")

# What a browser may show inline: raster images and PDF (never SVG, which can run scripts).
INLINE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".bmp": "image/bmp",
    ".ico": "image/x-icon",
    ".pdf": "application/pdf",
}
_IMAGES = frozenset(ext for ext, mime in INLINE_TYPES.items() if mime.startswith("image/"))
_MORE_TYPES = {".md": "text/markdown", ".csv": "text/csv", ".svg": "image/svg+xml"}

DEFAULT_UPLOAD_EXT = frozenset(
    {
        *(e.lstrip(".") for e in INLINE_TYPES),
        *"svg tif tiff heic txt md markdown rst csv tsv json jsonl yaml yml toml xml html htm "
        "css js ts tsx jsx py ipynb r sql sh ini cfg conf log tex doc docx xls xlsx ppt pptx "
        "odt ods odp rtf epub zip tar gz tgz bz2 xz 7z mp3 wav ogg flac m4a mp4 mov webm mkv "
        "c h cpp hpp java go rs rb php swift kt".split(),
    }
)


AgentName = Annotated[str | None, Query(max_length=200)]
PathParam = Annotated[str, Query(max_length=4096)]


def upload_limit() -> int:
    """Bytes one upload may have: ``LOVIA_MAX_UPLOAD_MB`` (default 25) MiB."""
    raw = os.environ.get("LOVIA_MAX_UPLOAD_MB", "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_UPLOAD_MB
    except ValueError:
        mb = DEFAULT_UPLOAD_MB
    return int(max(mb, 0.0) * 1024 * 1024)


def _allowed_ext() -> frozenset[str] | None:
    """The extensions uploads may have (``None``: any), from ``LOVIA_UPLOAD_ALLOWED_EXT``."""
    raw = os.environ.get("LOVIA_UPLOAD_ALLOWED_EXT", "").strip()
    if not raw:
        return DEFAULT_UPLOAD_EXT
    names = {p.strip().lstrip(".").lower() for p in re.split(r"[,\s]+", raw) if p.strip()}
    return None if "*" in names else frozenset(names)


def _mime(path: Path) -> str:
    ext = path.suffix.lower()
    found = INLINE_TYPES.get(ext) or _MORE_TYPES.get(ext) or mimetypes.guess_type(path.name)[0]
    return found or "application/octet-stream"


def _safe_name(raw: str) -> str:
    """A file name from a client's: its last part, printable, no leading dots."""
    name = re.split(r"[\\/]", raw or "")[-1]
    name = unicodedata.normalize("NFC", name)
    name = "".join(c for c in name if c.isprintable() and c not in '<>:"|?*').strip()
    name = name.lstrip(". ")[:200]
    return name or "upload"


class _Panel:
    """One agent's workspace as the panel reads it."""

    def __init__(self, agent: Agent, root: Path) -> None:
        self.agent = agent
        self.root = root
        config = getattr(agent, "workspace", None)
        self.config = getattr(config, "workspace", config)
        self.policy = getattr(self.config, "policy", None)
        self.limits = getattr(self.config, "limits", None)

    def resolve(self, path: str) -> ResolvedPath:
        """``path`` inside the root and readable by the agent; else 403 ``path_denied``."""
        try:
            rp = resolve_path(self.root, path)
        except Exception:  # a NUL, a path the OS cannot resolve
            raise WebError(403, "path_denied", "path not readable") from None
        if not rp.inside or not self._readable(rp):
            raise WebError(
                403,
                "path_denied",
                "path not readable",
                "the panel reads only what the agent may read inside its workspace",
            )
        return rp

    def _readable(self, rp: ResolvedPath) -> bool:
        if self.policy is None:
            return True
        decision: str = self.policy.decide_path(rel=rp.rel, abs_posix=rp.abs_posix, op="read")
        return decision != "deny"

    def visible(self, path: Path) -> bool:
        return self._readable(self._resolved(path))

    def _resolved(self, path: Path) -> ResolvedPath:
        target = path.resolve()
        try:
            rel: str | None = target.relative_to(self.root).as_posix()
        except ValueError:
            rel = None
        return ResolvedPath(raw=str(path), abs=target, rel=rel)

    def entry(self, path: Path) -> dict[str, Any] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        link = os.readlink(path) if path.is_symlink() else None
        is_dir = path.is_dir()
        return {
            "path": path.relative_to(self.root).as_posix(),
            "is_dir": is_dir,
            "size": None if is_dir else st.st_size,
            "mtime": st.st_mtime,
            "symlink_target": link,
        }

    def children(self, base: Path) -> list[dict[str, Any]]:
        out = []
        for child in sorted(base.iterdir(), key=lambda p: p.name):
            if child.name.startswith("."):
                continue
            if not child.resolve().is_relative_to(self.root) or not self.visible(child):
                continue
            found = self.entry(child)
            if found is not None:
                out.append(found)
        out.sort(key=lambda e: (not e["is_dir"], e["path"]))
        return out

    def recent(self, limit: int) -> list[dict[str, Any]]:
        files: list[tuple[float, Path]] = []
        for path in self._walk():
            try:
                files.append((path.stat().st_mtime, path))
            except OSError:
                continue
        files.sort(key=lambda f: (-f[0], f[1].as_posix()))
        out = []
        for _, path in files:
            found = self.entry(path)
            if found is not None:
                out.append(found)
                if len(out) >= limit:
                    break
        return out

    def _walk(self) -> Iterator[Path]:
        seen = 0
        for top, dirs, names in os.walk(self.root):
            here = Path(top)
            rel_top = here.relative_to(self.root)
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".")
                and d not in _SKIP_DIRS
                and not (rel_top == Path(".") and d == SCRATCH_DIR)
                and self.visible(here / d)
            )
            for name in names:
                seen += 1
                if seen > RECENT_SCAN:
                    return
                if name.startswith(".") or name.endswith(_SKIP_SUFFIXES):
                    continue
                path = here / name
                if path.is_symlink() and not path.resolve().is_relative_to(self.root):
                    continue
                if self.visible(path):
                    yield path

    def read_text(self, rp: ResolvedPath, start: int) -> dict[str, Any]:
        rel = rp.rel or rp.raw
        max_bytes = getattr(self.limits, "max_file_read_bytes", 10_000_000)
        max_chars = getattr(self.limits, "max_file_read_chars", 50_000)
        with open(rp.abs, "rb") as fh:
            raw = fh.read(max_bytes)
        text: str | None
        if b"\x00" in raw[:SNIFF_BYTES]:
            text = None
        else:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:  # a cut in the middle of a character is fine
                text = raw[: exc.start].decode("utf-8") if exc.start > len(raw) - 4 else None
        if text is None:
            return {
                "path": rel,
                "content": "",
                "start": 1,
                "end": 0,
                "total_lines": 0,
                "truncated": False,
                "binary": True,
            }
        lines = text.splitlines(keepends=True)
        total = len(lines)
        first = max(1, start)
        taken: list[str] = []
        used = 0
        for line in lines[first - 1 :]:
            if taken and used + len(line) > max_chars:
                break
            taken.append(line)
            used += len(line)
        end = first - 1 + len(taken)
        return {
            "path": rel,
            "content": "".join(taken),
            "start": first,
            "end": end,
            "total_lines": total,
            "truncated": end < total,
            "binary": False,
        }


def _etag(path: Path, st: os.stat_result) -> str:
    seed = f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}".encode()
    return '"' + hashlib.sha256(seed).hexdigest()[:32] + '"'


def _matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    bare = etag.strip('"')
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag.strip('"') == bare:
            return True
    return False


def _attachment(name: str) -> str:
    ascii_name = name.encode("ascii", "replace").decode().replace('"', "_").replace("\\", "_")
    from urllib.parse import quote

    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name)}"


def workspace_routes(deps: RouterDeps) -> APIRouter:  # noqa: C901 - one closure per route
    from .attachments import workspace_root

    router = APIRouter(tags=["workspace"])

    def panel(agent: str | None) -> _Panel:
        found = deps.panel_agent(agent)
        root = workspace_root(found)
        if root is None or not root.is_dir():
            raise WebError(404, "feature_unavailable", "agent has no workspace")
        return _Panel(found, root)

    @router.get("/api/workspace", summary="The agent's workspace: its name")
    async def info(agent: AgentName = None) -> dict[str, Any]:
        p = panel(agent)
        return {"name": p.root.name, "scratch_dir": SCRATCH_DIR}

    @router.get("/api/workspace/files", summary="One directory level, directories first")
    async def files(agent: AgentName = None, path: PathParam = ".") -> list[dict[str, Any]]:
        p = panel(agent)
        rp = p.resolve(path)
        if not rp.abs.is_dir():
            raise WebError(404, "file_not_found", f"Not a directory: {rp.rel or path}")
        return p.children(rp.abs)

    @router.get("/api/workspace/recent", summary="The newest files, newest first")
    async def recent(
        agent: AgentName = None, limit: Annotated[int, Query(ge=1, le=500)] = RECENT_LIMIT
    ) -> list[dict[str, Any]]:
        """Files only; environment files (``__pycache__``, ``*.pyc``, ``venv``,
        ``node_modules``), dotfiles and the scratch directory ``tmp/`` are left out (they
        are still listed by ``/files`` and read by name)."""
        return panel(agent).recent(limit)

    @router.get("/api/workspace/file", summary="A text file's lines, paged")
    async def file(
        agent: AgentName = None, path: PathParam = "", start: Annotated[int, Query(ge=1)] = 1
    ) -> dict[str, Any]:
        """``binary`` (and empty ``content``) for a file that is not text; ``truncated``
        when more lines follow ``end`` (ask again with ``start=end+1``)."""
        p = panel(agent)
        rp = p.resolve(path)
        if not rp.abs.is_file():
            raise WebError(404, "file_not_found", "no such file")
        return p.read_text(rp, start)

    @router.get("/api/workspace/raw", summary="A file's bytes (inline preview or download)")
    async def raw(
        request: Request, agent: AgentName = None, path: PathParam = "", download: bool = False
    ) -> Response:
        """Inline only for raster images and PDF (415 otherwise); ``download=1`` sends any
        file as an attachment. ``ETag`` + ``Cache-Control: no-cache``: a revalidation of an
        unchanged file is 304."""
        p = panel(agent)
        rp = p.resolve(path)
        if not rp.abs.is_file():
            raise WebError(404, "file_not_found", "no such file")
        ext = rp.abs.suffix.lower()
        if not download and ext not in INLINE_TYPES:
            raise WebError(
                415,
                "unsupported_file_type",
                "this file type is not shown inline",
                "download it with download=1",
            )
        st = rp.abs.stat()
        cap = getattr(p.limits, "max_file_read_bytes", 10_000_000)
        if st.st_size > cap:
            raise WebError(413, "file_too_large", f"the file is over {cap} bytes")
        etag = _etag(rp.abs, st)
        headers = {"ETag": etag, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
        if download:
            headers["Content-Disposition"] = _attachment(rp.abs.name)
        if _matches(request.headers.get("if-none-match"), etag):
            return Response(status_code=304, headers=headers)
        data = rp.abs.read_bytes()
        mime = INLINE_TYPES[ext] if not download else _mime(rp.abs)
        if mime.startswith("text/"):
            mime += "; charset=utf-8"
        return Response(data, media_type=mime, headers=headers)

    @router.post("/api/workspace/upload", summary="Save one file under uploads/")
    async def upload(file: UploadFile, agent: AgentName = None) -> dict[str, Any]:
        """A new file in ``uploads/`` (a name taken gets ``-1``, ``-2``...): its ``path``,
        ``name``, ``mime``, ``kind`` (``image`` for a raster image, else ``file``) and
        ``size``. 415 for an extension outside ``LOVIA_UPLOAD_ALLOWED_EXT`` (``*``: any),
        413 over ``LOVIA_MAX_UPLOAD_MB``, 422 for an empty file."""
        p = panel(agent)
        name = _safe_name(file.filename or "")
        stem, dot, ext = name.rpartition(".")
        if not dot or not stem:
            stem, ext = name, ""
        allowed = _allowed_ext()
        if ext and allowed is not None and ext.lower() not in allowed:
            raise WebError(
                415,
                "unsupported_file_type",
                f"file type '.{ext.lower()}' is not allowed",
                "set LOVIA_UPLOAD_ALLOWED_EXT to allow it",
            )
        cap = upload_limit()
        data = await file.read(cap + 1)
        if len(data) > cap:
            raise WebError(413, "file_too_large", f"the file is over {cap} bytes")
        if not data:
            raise WebError(422, "invalid_request", "empty file")
        folder = p.root / UPLOAD_DIR
        folder.mkdir(exist_ok=True)
        if not folder.resolve().is_relative_to(p.root):
            raise WebError(403, "path_denied", f"{UPLOAD_DIR}/ leads out of the workspace")
        for n in range(10_000):
            candidate = name if n == 0 else f"{stem}-{n}{dot}{ext}"
            target = folder / candidate
            p.resolve(f"{UPLOAD_DIR}/{candidate}")  # a denied name is refused, not written
            try:
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            break
        else:  # pragma: no cover - ten thousand files of one name
            raise WebError(409, "invalid_request", "too many uploads of that name")
        suffix = target.suffix.lower()
        return {
            "path": f"{UPLOAD_DIR}/{target.name}",
            "name": target.name,
            "mime": _mime(target),
            "kind": "image" if suffix in _IMAGES else "file",
            "size": len(data),
            "uploaded_at": time.time(),
        }

    return router
