"""Recorded runs as regression tests: play a stored run's model turns back, re-run an agent
against them, and say where the re-run goes another way.

A checkpoint holds every model turn of its run, in order. ``RecordedProvider`` answers the
model calls of a re-run with those turns, one per call, so the re-run's tools, guardrails
and output handling run as they do today while the model says what it said then.
``retest`` compares the re-run's entries and answer with the recording; ``assert_same_run``
raises ``AssertionError`` with the divergences as a diff.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agent import Agent
from ..errors import UserError
from ..messages import ToolCall
from ..providers.base import ToolSpec
from ..runner import Runner
from ..settings import ModelSettings
from ..stores.checkpoint import Checkpointer, RunSnapshot
from ..stores.memory import InMemoryCheckpointer
from ..stores.run_options import CheckpointOptions
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ModelDelta,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    entry_to_dict,
)
from ..usage import Usage
from . import ScriptedProvider, ScriptedTurn

__all__ = [
    "Divergence",
    "RecordedProvider",
    "RecordingExhausted",
    "RetestReport",
    "assert_same_run",
    "model_turns",
    "retest",
]

_MODEL_ENTRIES = (ReasoningEntry, AssistantTextEntry, ToolCallEntry)


def model_turns(entries: Sequence[TranscriptEntry]) -> list[ScriptedTurn]:
    """The model turns of a run's entries, in order: each maximal stretch of reasoning,
    text and tool calls (in that order) is one turn; inputs and tool results end a turn."""
    turns: list[ScriptedTurn] = []
    current: ScriptedTurn | None = None
    for entry in entries:
        if not isinstance(entry, _MODEL_ENTRIES):
            current = None
            continue
        starts = current is None or (
            # reasoning or text after the turn's calls or text is the next turn
            not isinstance(entry, ToolCallEntry) and (current.tool_calls or current.content)
        )
        if starts:
            current = ScriptedTurn(content=None, usage=Usage())
            turns.append(current)
        assert current is not None
        if isinstance(entry, ReasoningEntry):
            current.reasoning = (current.reasoning or "") + entry.content
        elif isinstance(entry, AssistantTextEntry):
            current.content = entry.content
        else:
            current.tool_calls.append(ToolCall(entry.call_id, entry.name, entry.arguments))
    return turns


class RecordingExhausted(AssertionError):
    """The re-run asked the model for a turn the recording does not have."""


class RecordedProvider(ScriptedProvider):
    """A model that answers with a stored run's model turns, in order.

    ``RecordedProvider(checkpointer, run_id)`` reads the run on the first call;
    ``RecordedProvider.of(snapshot)`` plays a snapshot you hold. A call past the last
    recorded turn raises ``RecordingExhausted``.
    """

    name = "recorded"

    def __init__(self, checkpointer: Checkpointer | None = None, run_id: str | None = None):
        super().__init__(model=f"recording:{run_id}")
        self._source = checkpointer
        self.run_id = run_id
        self.snapshot: RunSnapshot | None = None

    @classmethod
    def of(cls, snapshot: RunSnapshot) -> RecordedProvider:
        provider = cls(None, snapshot.run_id)
        provider._use(snapshot)
        return provider

    def _use(self, snapshot: RunSnapshot) -> None:
        self.snapshot = snapshot
        self.script = list(model_turns(snapshot.entries))

    async def recording(self) -> RunSnapshot:
        """The recorded run (read from the checkpointer once)."""
        if self.snapshot is None:
            if self._source is None or self.run_id is None:
                raise UserError("RecordedProvider needs a checkpointer and a run id")
            snapshot = await self._source.load(self.run_id)
            if snapshot is None:
                raise UserError(
                    f"no run {self.run_id!r} in the checkpointer to play back",
                    hint="pass the run_id of a stored run ('lovia runs list' shows them)",
                )
            self._use(snapshot)
        assert self.snapshot is not None
        return self.snapshot

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        await self.recording()
        if self.remaining <= 0:
            raise RecordingExhausted(
                f"the re-run asked the model for turn {len(self.script) + 1}; the recording "
                f"of run {self.run_id!r} has {len(self.script)}"
            )
        async for delta in super().stream(
            entries, tools=tools, response_format=response_format, settings=settings
        ):
            yield delta


@dataclass(frozen=True)
class Divergence:
    """One place where a re-run went another way than its recording.

    ``kind`` is ``"tool_arguments"``, ``"tool_result"``, ``"text"``, ``"extra_turn"``,
    ``"missing"``, ``"entry"``, ``"output"`` or ``"error"``; ``index`` is the entry's
    position in the run.
    """

    kind: str
    message: str
    recorded: Any = None
    now: Any = None
    index: int | None = None

    def diff(self) -> str:
        where = "" if self.index is None else f"entry {self.index}: "
        lines = [f"* {where}{self.message}"]
        old, new = _shown(self.recorded), _shown(self.now)
        if "\n" in old or "\n" in new:
            lines += [
                "    " + line.rstrip("\n")
                for line in difflib.unified_diff(
                    old.splitlines(True), new.splitlines(True), "recorded", "now", n=2
                )
            ]
        elif self.recorded is not None or self.now is not None:
            lines += [f"    - recorded: {old}", f"    + now:      {new}"]
        return "\n".join(lines)


def _shown(value: Any) -> str:
    if value is None:
        return "(nothing)"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


@dataclass(frozen=True)
class RetestReport:
    """What ``retest`` found: ``same`` when the re-run matched its recording."""

    run_id: str
    divergences: list[Divergence] = field(default_factory=list)
    recorded_output: Any = None
    output: Any = None

    @property
    def same(self) -> bool:
        return not self.divergences

    def diff(self) -> str:
        if self.same:
            return f"run {self.run_id!r}: the re-run matches its recording"
        head = f"run {self.run_id!r}: the re-run diverges from its recording"
        return "\n".join([f"{head} ({len(self.divergences)}):", *(d.diff() for d in self)])

    def __iter__(self) -> Any:
        return iter(self.divergences)


def _compare_entry(
    i: int, old: TranscriptEntry, new: TranscriptEntry, names: dict[str, str]
) -> Divergence | None:
    if old == new:
        return None
    if isinstance(old, ToolCallEntry) and isinstance(new, ToolCallEntry):
        if old.name == new.name:
            return Divergence(
                "tool_arguments",
                f"tool {old.name!r} was called with other arguments (call {old.call_id!r})",
                old.arguments,
                new.arguments,
                i,
            )
        return Divergence("tool_arguments", "another tool was called", old.name, new.name, i)
    if isinstance(old, ToolResultEntry) and isinstance(new, ToolResultEntry):
        if (old.output, old.is_error) == (new.output, new.is_error):
            return None  # the same text: raw values are not compared
        tool = names.get(old.call_id, "?")
        return Divergence(
            "tool_result",
            f"tool {tool!r} returned another result (call {old.call_id!r})"
            + (" and now fails" if new.is_error and not old.is_error else ""),
            old.output,
            new.output,
            i,
        )
    if isinstance(old, AssistantTextEntry) and isinstance(new, AssistantTextEntry):
        return Divergence("text", "the model said other text", old.content, new.content, i)
    return Divergence(
        "entry", "the run went another way", entry_to_dict(old), entry_to_dict(new), i
    )


def compare(
    recorded: RunSnapshot, entries: Sequence[TranscriptEntry], output: Any, error: Any
) -> list[Divergence]:
    """The divergences of a re-run (its entries, answer and error) from its recording."""
    names = {
        e.call_id: e.name for e in [*recorded.entries, *entries] if isinstance(e, ToolCallEntry)
    }
    found: list[Divergence] = []
    for i, (old, new) in enumerate(zip(recorded.entries, entries, strict=False)):
        d = _compare_entry(i, old, new, names)
        if d is not None:
            found.append(d)
    n = len(recorded.entries)
    if isinstance(error, RecordingExhausted):
        found.append(Divergence("extra_turn", f"a turn the recording lacks: {error}"))
    elif len(entries) > n:
        found.append(
            Divergence(
                "extra_turn",
                "the re-run goes on where the recording ended",
                None,
                [entry_to_dict(e) for e in entries[n:]],
                n,
            )
        )
    if len(entries) < n and not isinstance(error, RecordingExhausted):
        found.append(
            Divergence(
                "missing",
                "the re-run stopped where the recording goes on",
                [entry_to_dict(e) for e in recorded.entries[len(entries) :]],
                None,
                len(entries),
            )
        )
    if error is not None and not isinstance(error, RecordingExhausted):
        found.append(
            Divergence("error", "the re-run failed", None, f"{type(error).__name__}: {error}")
        )
    elif error is None and output != recorded.output:
        found.append(Divergence("output", "the final output differs", recorded.output, output))
    return found


def _input_of(entries: Sequence[TranscriptEntry]) -> list[TranscriptEntry]:
    """The input the run started with: its entries before the model's first turn."""
    out: list[TranscriptEntry] = []
    for entry in entries:
        if not isinstance(entry, InputEntry):
            break
        out.append(entry)
    return out


async def retest(
    agent: Agent,
    checkpointer: Checkpointer | RunSnapshot,
    run_id: str,
    *,
    model: Any = None,
) -> RetestReport:
    """Re-run ``agent`` on the input of the stored run ``run_id``, its model answering with
    the recorded turns (or ``model``, when given), and compare the two runs. The recording
    comes from ``checkpointer``, or is the ``RunSnapshot`` passed in its place.

    The re-run is checkpointed in memory, never in ``checkpointer``: retesting changes
    nothing that is stored.
    """
    recorded = (
        checkpointer if isinstance(checkpointer, RunSnapshot) else await checkpointer.load(run_id)
    )
    if recorded is None:
        raise UserError(
            f"no run {run_id!r} to re-test",
            hint="pass the run_id of a stored run ('lovia runs list' shows them)",
        )
    provider = model if model is not None else RecordedProvider.of(recorded)
    scratch = InMemoryCheckpointer()
    error: BaseException | None = None
    try:
        await Runner.run(
            agent.clone(model=provider),
            _input_of(recorded.entries),
            checkpoint=CheckpointOptions(scratch, "retest", lease=False),
        )
    except Exception as exc:  # the re-run's failure is a finding, reported below
        error = exc
    rerun = await scratch.load("retest")
    entries = [] if rerun is None else rerun.entries
    output = None if rerun is None else rerun.output
    return RetestReport(run_id, compare(recorded, entries, output, error), recorded.output, output)


async def assert_same_run(
    agent: Agent,
    checkpointer: Checkpointer | RunSnapshot,
    run_id: str,
    *,
    model: Any = None,
) -> RetestReport:
    """``retest``, raising ``AssertionError`` with the diff when the re-run diverges."""
    report = await retest(agent, checkpointer, run_id, model=model)
    if not report.same:
        raise AssertionError(report.diff())
    return report
