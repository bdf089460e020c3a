"""How a server says a request did not fit the model's context window, and which window it
named (``ContextOverflowError.reported_window``)."""

from __future__ import annotations

import re

__all__ = ["named_window", "overflow_words"]

# Servers word a context-length rejection differently; these cover OpenAI, Anthropic, vLLM,
# llama.cpp, Ollama and OpenRouter as they answer today.
_OVERFLOW = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many tokens"
    r"|exceeds the (?:model'?s? )?(?:maximum|max)|input is too long|context size",
    re.IGNORECASE,
)
# The limit such a rejection names: OpenAI and vLLM ("maximum context length is 65536 tokens"),
# Anthropic ("prompt is too long: 210000 tokens > 200000 maximum").
_NAMED_WINDOW = (
    re.compile(r"maximum context length is (\d[\d,]*) tokens", re.IGNORECASE),
    re.compile(r"\d[\d,]* tokens? > (\d[\d,]*) maximum", re.IGNORECASE),
)


def named_window(message: str) -> int | None:
    """The context window an overflow error's text names, if it names one."""
    for pattern in _NAMED_WINDOW:
        found = pattern.search(message)
        if found is not None:
            return int(found.group(1).replace(",", ""))
    return None


def overflow_words(message: str) -> bool:
    """Whether an error answer's text says the prompt was too long for the model."""
    return _OVERFLOW.search(message) is not None
