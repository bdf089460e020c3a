"""Where this project deliberately differs from lovia 0.9.119, program by program.

Each entry names a program in ``programs/`` and a key of its JSON summary. The compatibility
test expects ``ours`` for that key instead of what 0.9.119 prints, and, when the reference venv
is present, checks that 0.9.119 still prints ``reference`` (so a departure cannot silently
drift). ``reason`` is what ``docs/compat.md`` tells a migrating user.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_UNSET: Any = object()


@dataclass(frozen=True)
class Departure:
    reason: str
    ours: Any
    reference: Any = _UNSET

    def has_reference(self) -> bool:
        return self.reference is not _UNSET


def _roundtrip(*, timeline: bool) -> dict[str, Any]:
    """p25's snapshot_roundtrip summary, with or without the head's ``timeline`` key."""
    keys = "agent_name context_state entries error last_input_tokens output pending_handoff"
    keys += " run_id started_at status turns updated_at usage"
    names = sorted([*keys.split(), *(["timeline"] if timeline else [])])
    return {
        "entries": [
            {"content": "hi", "role": "user", "type": "input"},
            {"content": "fine", "id": None, "type": "assistant_text"},
        ],
        "head": ["RunHead", "bot", "completed", 1, True],
        "keys": names,
        "same": [True, True, True, "r1"],
        "status": "completed",
        "usage": {
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "input_tokens": 1,
            "output_tokens": 1,
        },
    }


# program name -> summary key -> departure
DEPARTURES: dict[str, dict[str, Departure]] = {
    "p23_checkpoint_replay": {
        "replay_stream_events": Departure(
            reason=(
                "Replaying a completed run streams only RunCompleted, as the sessions and"
                " checkpoints"
                " page says (a replay re-emits terminal events only); 0.9.119 also emits"
                " RunStarted."
            ),
            ours=["RunCompleted"],
            reference=["RunStarted", "RunCompleted"],
        ),
    },
    "p24_if_run_exists": {
        "hints": Departure(
            reason=(
                "Every error says what to do: resume_only with no stored run raises UserError"
                " with a"
                " hint here; 0.9.119's has none."
            ),
            ours={"r1:fail": True, "r3:resume_only": True},
            reference={"r1:fail": True, "r3:resume_only": False},
        ),
        "in_session": Departure(
            reason=(
                "restart or fail once the checkpoint was deleted, for a run whose segment the"
                " session already holds, is refused with UserError: its new answer could never"
                " land in the session; 0.9.119 runs it and loses the answer. A restart of a"
                " stored run runs again in both (with a warning here)."
            ),
            ours={
                "fail:deleted": ["UserError", ["first"]],
                "restart:deleted": ["UserError", ["first"]],
                "restart:kept": ["second", ["first"]],
            },
            reference={
                "fail:deleted": ["second", ["first"]],
                "restart:deleted": ["second", ["first"]],
                "restart:kept": ["second", ["first"]],
            },
        ),
    },
    "p25_run_head_snapshot": {
        "snapshot_roundtrip": Departure(
            reason=(
                "A stored run's head also holds its timeline (when each model turn and tool"
                " call ran, with each turn's tokens), which `lovia runs show` draws; 0.9.119's"
                " heads have no such field, and read here with an empty one."
            ),
            ours=_roundtrip(timeline=True),
            reference=_roundtrip(timeline=False),
        ),
    },
    "p56_crash_and_resume": {
        "resume_after_answer": Departure(
            reason=(
                "A run whose process died after its final answer was saved (judging it) is"
                " resumed by judging that answer: the model is not asked again (C2, C10); "
                "0.9.119 asks the model for a second answer and keeps both in the session."
            ),
            ours={
                "judged": ["Draft one."],
                "model_calls": 0,
                "output": "Draft one.",
                "session": ["input", "assistant_text"],
            },
            reference={
                "judged": ["Draft two."],
                "model_calls": 1,
                "output": "Draft two.",
                "session": ["input", "assistant_text", "assistant_text"],
            },
        ),
    },
    "p55_run_option_edges": {
        "session_without_id": Departure(
            reason=(
                "Every error says what to do: a session passed without a session_id raises"
                " UserError with a hint here; 0.9.119's has none."
            ),
            ours=[["UserError", True], []],
            reference=[["UserError", False], []],
        ),
        "id_without_session": Departure(
            reason=(
                "A run given a session_id without a session remembers nothing: it says so with"
                " a UserWarning (and a log line); 0.9.119 says nothing."
            ),
            ours=["x", ["UserWarning"]],
            reference=["x", []],
        ),
    },
    "p29_cancellation": {
        "cancel_at_final_turn_start": Departure(
            reason=(
                "A cancel requested at a turn's start (a TurnStarted hook or handle.cancel() there)"
                " interrupts before the model is called; 0.9.119 still calls the model and"
                " completes"
                " when that turn turns out to be the final one."
            ),
            ours="RunCancelled",
            reference="answer",
        ),
        "final_turn_completes": Departure(
            reason=(
                "A cancel that lands while the model streams closes the stream at once and"
                " interrupts the run (resumable); 0.9.119 lets the model call run to its end"
                " and completes the run when that turn answers without tools, so a stop"
                " pressed during a long or runaway answer stops nothing and its tokens are"
                " still generated and billed."
            ),
            ours="RunCancelled",
            reference="answer",
        ),
    },
    "p95_documented_pages": {
        "literal_json_string": Departure(
            reason=(
                'A final answer that is the JSON string the contract asks for ("yes") fits'
                ' output_type=Literal["yes", "no"]; 0.9.119 decodes it and then parses the'
                " word as JSON again, so it refuses the answer (a repair turn, then a failure)."
            ),
            ours=[["ok", "yes", 1], ["ok", "yes", 1]],
            reference=[["refused", "Literal", 2], ["refused", "Literal", 1]],
        ),
    },
    "p94_guardrail_and_cancel_edges": {
        "input_guardrail_trip": Departure(
            reason=(
                "A re-submitted run that an input guardrail refused is guarded again on its"
                " stored input before the model sees it; 0.9.119 continues it without the"
                " guardrails. Both keep the input in the failed head and ignore the new input."
            ),
            ours=[["failed", ["input"], 0], "hi", ["hello"], [["hello"], ["hello"]]],
            reference=[["failed", ["input"], 0], "hi", ["hello"], [["hello"]]],
        ),
        **{
            key: Departure(
                reason=(
                    "A cancel heard when a tool call starts (handle.cancel() on ToolCallStarted,"
                    " or a ToolCallStarted hook) starts no call of that turn: the run stops"
                    " interrupted and a resume runs each call once; 0.9.119 runs the calls to"
                    " their end and keeps their results."
                ),
                ours=[["RunCancelled", [], "interrupted", ["input", *calls]], "done", ran],
                reference=[
                    ["RunCancelled", ran, "interrupted", ["input", *calls, *results]],
                    "done",
                    [],
                ],
            )
            for key, calls, results, ran in (
                ("cancel_on_tool_call_started", ["tool_call"], ["tool_result:w1"], [1]),
                (
                    "cancel_on_tool_call_started_batch",
                    ["tool_call", "tool_call"],
                    ["tool_result:w1", "tool_result:w2"],
                    [1, 2],
                ),
                ("cancel_in_tool_call_started_hook", ["tool_call"], ["tool_result:s1"], [1]),
            )
        },
        "cancel_while_async_tool_runs": Departure(
            reason=(
                "A cancel while an async tool runs cancels it at once (no result; a resume runs"
                " it again); 0.9.119 waits for the call to end and keeps its result. A sync"
                " tool's thread is waited for, up to a few seconds, and its result kept."
            ),
            ours=["RunCancelled", "interrupted", ["input", "tool_call"]],
            reference=["RunCancelled", "interrupted", ["input", "tool_call", "tool_result:w1"]],
        ),
    },
    "p37_transcript_dicts": {
        "drop_dangling_generator": Departure(
            reason=(
                "drop_dangling_tool_calls accepts any iterable; 0.9.119 reads its argument twice,"
                " so"
                " a generator comes back empty."
            ),
            ours=3,
            reference=0,
        ),
        "drop_dangling_reused_call_id": Departure(
            reason=(
                "A call_id reused by a later call that has no result of its own is dangling and is"
                " dropped; 0.9.119 keeps it because an earlier call with that id was answered,"
                " which"
                " providers then reject."
            ),
            ours=["tool_call", "tool_result"],
            reference=["tool_call", "tool_result", "tool_call"],
        ),
    },
    "p47_context_policy": {
        "archived_outputs": Departure(
            reason=(
                "With a result store configured, every tool output is archived, so trimming a"
                " session"
                " later never loses an output for good; 0.9.119 archives only outputs it offloads"
                " from the view."
            ),
            ours=["ok", True],
            reference=["ok", False],
        ),
    },
    "p86_default_retry_and_assistant_input": {
        "a_permanent_error_is_not_retried": Departure(
            reason=(
                "The default RetryPolicy retries what a retry can fix: a ProviderError whose"
                " retryable is unknown is retried only for 408, 409, 429, 5xx or no status;"
                " 0.9.119 also retries a 400 and waits out four backoffs before failing."
            ),
            ours=[
                [[["RunStarted"], ["TurnStarted"], ["RunFailed"]], {"raised": "ProviderError"}],
                1,
            ],
            reference=[
                [
                    [
                        ["RunStarted"],
                        ["TurnStarted"],
                        ["ModelRetrying", 1, 5],
                        ["MessageCompleted"],
                        ["TurnEnded"],
                        ["RunCompleted"],
                    ],
                    "ok",
                ],
                2,
            ],
        ),
    },
}
