"""The status a checkpointed run gets when a model error ends it: ``interrupted`` when a
retry can fix the error (rate limit, 5xx, dropped connection, ``retryable=True``), as in
lovia 0.9.119, ``failed`` when it cannot; both resume."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    ContextOverflowError,
    ProviderError,
    RetryPolicy,
    Runner,
    SQLiteCheckpointer,
)
from lovia.testing import ScriptedProvider, text
from lovia.transcript import ModelDelta


class FailsOnce(ScriptedProvider):
    """Raises ``error`` on the first call, then answers from its script."""

    def __init__(self, error: BaseException) -> None:
        super().__init__([text("recovered")])
        self.error: BaseException | None = error

    async def stream(self, entries: Sequence[Any], **kwargs: Any) -> AsyncIterator[ModelDelta]:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        async for delta in super().stream(entries, **kwargs):
            yield delta


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ProviderError("temporary outage", retryable=True), "interrupted"),
        (ProviderError("overloaded", status_code=503), "interrupted"),
        (ProviderError("rate limited", status_code=429), "interrupted"),
        (ProviderError("connection reset"), "interrupted"),
        (ProviderError("bad request", status_code=400), "failed"),
        (ProviderError("refused", retryable=False), "failed"),
        (ContextOverflowError("prompt is too long"), "failed"),
    ],
)
async def test_the_head_says_whether_a_retry_can_fix_the_error(
    tmp_path: Path, error: ProviderError, status: str
) -> None:
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    agent = Agent(name="a", model=FailsOnce(error))
    with pytest.raises(type(error)):
        await Runner.run(
            agent, "hi", checkpoint=CheckpointOptions(cp, "r"), retry=RetryPolicy(max_attempts=1)
        )
    snap = await cp.load("r")
    assert snap is not None and snap.status == status
    assert snap.error is not None and snap.error["type"] == type(error).__name__
    assert snap.turns == 0

    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "r"))
    assert result.output == "recovered"
