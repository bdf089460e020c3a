"""Memory: long-term memory across conversations (Notes always in the prompt, an archive to
recall from), with the seams to bring your own stores (``NotesStore``, ``Index``,
``Embedder``)."""

from __future__ import annotations

from .index import Doc, Fusable, Hit, HybridIndex, Index, KeywordIndex
from .notes import FileNotesStore, NotesStore
from .plugin import Memory
from .vector import Embedder, OpenAIEmbedder, VectorIndex

__all__ = [
    "Doc",
    "Embedder",
    "FileNotesStore",
    "Fusable",
    "Hit",
    "HybridIndex",
    "Index",
    "KeywordIndex",
    "Memory",
    "NotesStore",
    "OpenAIEmbedder",
    "VectorIndex",
]
