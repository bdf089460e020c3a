"""The semantic arm: the ``Embedder`` seam, ``OpenAIEmbedder`` (any OpenAI-compatible
``/embeddings`` endpoint, over httpx) and ``VectorIndex`` (vectors in a SQLite file)."""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ...errors import ProviderError, UserError
from .index import Doc, Fusable, Hit

if TYPE_CHECKING:
    import httpx

__all__ = ["Embedder", "OpenAIEmbedder", "VectorIndex"]

_OPENAI = "https://api.openai.com/v1"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed size. ``id`` names the vector space (model and
    size): vectors of two spaces cannot be compared, so an index that finds another ``id``
    than the one it stored starts over."""

    id: str

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint.

    The endpoint and key come from the arguments, else ``LOVIA_EMBEDDING_BASE_URL`` /
    ``LOVIA_EMBEDDING_API_KEY``, else ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (chat and
    embeddings often live on different hosts). Texts go ``batch_size`` to a request.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        dimensions: int | None = None,
        client: httpx.AsyncClient | None = None,
        timeout: float | None = None,
        default_headers: dict[str, str] | None = None,
        trust_env: bool | None = None,
        batch_size: int = 32,
    ) -> None:
        if batch_size < 1:
            raise UserError(f"OpenAIEmbedder: batch_size must be 1 or more, got {batch_size}")
        self.model = model
        self.dimensions = dimensions
        self.id = f"openai:{model}:{dimensions}" if dimensions else f"openai:{model}"
        env = os.environ
        self.base_url = (
            base_url or env.get("LOVIA_EMBEDDING_BASE_URL") or env.get("OPENAI_BASE_URL") or _OPENAI
        ).rstrip("/")
        self.api_key = api_key or env.get("LOVIA_EMBEDDING_API_KEY") or env.get("OPENAI_API_KEY")
        self.batch_size = batch_size
        self._client = client
        self._timeout = timeout if timeout is not None else 60.0
        self._headers = dict(default_headers or {})
        self._trust_env = True if trust_env is None else trust_env

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the HTTP client passed in (if any)."""
        if self._client is not None:
            await self._client.aclose()

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        if not self.api_key and self.base_url == _OPENAI:
            raise UserError(
                "OpenAIEmbedder: OpenAI's own endpoint requires an API key",
                hint="set LOVIA_EMBEDDING_API_KEY or OPENAI_API_KEY, pass api_key=, or point "
                "base_url= at a server that needs none",
            )
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(await self._batch(texts[start : start + self.batch_size]))
        return out

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        headers = dict(self._headers)
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        import httpx  # loaded when first used: `import lovia` stays without an HTTP client

        url = f"{self.base_url}/embeddings"
        try:
            if self._client is not None:
                reply = await self._client.post(url, json=body, headers=headers)
            else:
                async with httpx.AsyncClient(
                    timeout=self._timeout, trust_env=self._trust_env
                ) as client:
                    reply = await client.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise ProviderError(
                f"embeddings request to {url} failed: {exc!r}", retryable=True
            ) from exc
        status = reply.status_code
        if status >= 400:
            raise ProviderError(
                f"embeddings endpoint {url} answered {status}: {reply.text[:300]}",
                status_code=status,
                retryable=status in (408, 409, 429) or status >= 500,
                hint="check the model name and LOVIA_EMBEDDING_BASE_URL / _API_KEY",
            )
        try:
            rows = sorted(reply.json()["data"], key=lambda d: d.get("index", 0))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ProviderError(
                f"embeddings endpoint {url} answered, but not in OpenAI format "
                "(a 'data' list of {'index', 'embedding'})"
            ) from exc
        if len(vectors) != len(texts):
            raise ProviderError(
                f"embeddings endpoint {url} sent {len(vectors)} vectors for {len(texts)} inputs"
            )
        return vectors


def _unit(vector: Sequence[float]) -> bytes:
    norm = math.sqrt(sum(x * x for x in vector))
    values = [x / norm for x in vector] if norm else list(vector)
    return struct.pack(f"<{len(values)}f", *values)


def _floats(blob: bytes) -> tuple[float, ...]:
    return struct.unpack(f"<{len(blob) // 4}f", blob)


class VectorIndex(Fusable):
    """Documents ranked by cosine similarity to the query, vectors kept (unit length,
    float32) in a SQLite file. It remembers which embedder made them: another embedder
    empties it, and it fills again as documents are added."""

    def __init__(self, path: str | os.PathLike[str], embedder: Embedder) -> None:
        from ...stores.memory_archive import VectorTable  # SQL lives with the stores

        self.path = path
        self.embedder = embedder
        self.table = VectorTable(path)

    def __repr__(self) -> str:
        return f"VectorIndex({str(self.path)!r}, {self.embedder!r})"

    async def add(self, docs: list[Doc]) -> None:
        if not docs:
            return
        vectors = await self.embedder.embed([d.text for d in docs])
        if len(vectors) != len(docs):
            raise ProviderError(f"the embedder gave {len(vectors)} vectors for {len(docs)} texts")
        rows = [
            (d.id, d.text, d.when, json.dumps(d.meta, ensure_ascii=False), _unit(v))
            for d, v in zip(docs, vectors, strict=True)
        ]
        await self.table.upsert(self.embedder.id, rows)

    async def remove(self, ids: list[str]) -> None:
        if ids:
            await self.table.remove(ids)

    async def search(self, query: str, k: int = 5) -> list[Hit]:
        if not query.strip() or k < 1:
            return []
        if not await self.table.count(self.embedder.id):
            return []  # nothing comparable stored: no need to embed the query
        [vector] = await self.embedder.embed([query])
        probe = _floats(_unit(vector))
        scored = []
        for (doc_id, text, when, meta), blob in await self.table.rows(self.embedder.id):
            stored = _floats(blob)
            if len(stored) == len(probe):
                score = sum(a * b for a, b in zip(stored, probe, strict=True))
                doc = Doc(id=doc_id, text=text, when=when, meta=json.loads(meta) if meta else {})
                scored.append(Hit(doc=doc, score=score))
        scored.sort(key=lambda h: h.score, reverse=True)
        return scored[:k]
