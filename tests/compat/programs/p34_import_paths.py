"""Every import path the 0.9.119 docs use, and the names each module exports."""

# ruff: noqa: E402
import asyncio
import json
import sys
import traceback

RESULTS: dict = {}


def check(name):
    """Record what ``fn`` returns (or which exception it raised) under ``name``."""

    def record(fn):
        try:
            value = fn()
            if asyncio.iscoroutine(value):
                value = asyncio.run(value)
            json.dumps(value)
        except Exception as exc:
            print(f"--- {name}:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            value = {"raised": type(exc).__name__}
        RESULTS[name] = value
        return fn

    return record


import importlib

SPECS = {
    "lovia": [
        "Agent",
        "AgentHooks",
        "BudgetExceeded",
        "CancelToken",
        "CheckpointOptions",
        "Checkpointer",
        "Compaction",
        "ContextOverflowError",
        "ContextPolicy",
        "FilePart",
        "FileResultStore",
        "GuardrailTripped",
        "Handoff",
        "ImagePart",
        "InMemoryCheckpointer",
        "InMemoryResultStore",
        "InMemorySession",
        "InvalidToolArguments",
        "LoviaError",
        "MCPError",
        "Mailbox",
        "MaxTurnsExceeded",
        "Message",
        "ModelSettings",
        "OutputValidationError",
        "Plugin",
        "PluginInstance",
        "Provider",
        "ProviderError",
        "ResultStore",
        "RetryPolicy",
        "RunBudget",
        "RunCancelled",
        "RunContext",
        "RunHandle",
        "RunHead",
        "RunResult",
        "RunSnapshot",
        "Runner",
        "SQLiteCheckpointer",
        "SQLiteSession",
        "Segment",
        "Session",
        "TextPart",
        "Tool",
        "ToolError",
        "TranscriptEntry",
        "Usage",
        "UserError",
        "assistant",
        "enable_logging",
        "events",
        "model_from_env",
        "system",
        "tool",
        "user",
    ],
    "lovia.messages": [
        "Message",
        "ToolCall",
        "Usage",
        "assistant",
        "system",
        "tool_message",
        "user",
    ],
    "lovia.parts": ["TextPart", "ImagePart", "FilePart"],
    "lovia.exceptions": [
        "LoviaError",
        "UserError",
        "ToolError",
        "GuardrailTripped",
        "RunCancelled",
    ],
    "lovia.events": [
        "RunStarted",
        "RunCompleted",
        "RunFailed",
        "ToolCallStarted",
        "ToolCallCompleted",
    ],
    "lovia.checkpointer": ["CheckpointOptions", "Checkpointer", "RunHead", "RunSnapshot"],
    "lovia.session": ["Segment", "Session"],
    "lovia.run_context": ["RunContext"],
    "lovia.runner": ["Runner"],
    "lovia.handoff": ["Handoff"],
    "lovia.hooks": ["AgentHooks"],
    "lovia.reliability": ["CancelToken", "RetryPolicy", "RunBudget"],
    "lovia.steering": ["Mailbox"],
    "lovia.approvals": ["ApprovalChannel"],
    "lovia.tracing": ["InMemoryTracer", "ConsoleTracer", "NoopTracer", "Tracer"],
    "lovia.stores": [
        "InMemoryCheckpointer",
        "InMemorySession",
        "SQLiteCheckpointer",
        "SQLiteSession",
    ],
    "lovia.transcript": [
        "InputEntry",
        "AssistantTextEntry",
        "ReasoningEntry",
        "ToolCallEntry",
        "ToolResultEntry",
        "TranscriptEntry",
        "entry_to_dict",
        "entry_from_dict",
        "drop_dangling_tool_calls",
    ],
    "lovia.testing": ["ScriptedProvider", "text", "call", "batch"],
    "lovia.tools": ["Tool", "tool"],
    "lovia.plugins": ["Plugin", "PluginInstance"],
    "lovia.context": [
        "Compaction",
        "ContextPolicy",
        "FileResultStore",
        "InMemoryResultStore",
        "ResultStore",
    ],
    "lovia.providers": [
        "Provider",
        "ModelSettings",
        "OpenAIChatProvider",
        "AnthropicProvider",
        "model_from_env",
    ],
}


def probe(module):
    def run():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            return "not importable"
        missing = [n for n in SPECS[module] if not hasattr(mod, n)]
        return {"missing": missing}

    return run


for _module in SPECS:
    check(_module)(probe(_module))


@check("lovia_all")
def _():
    import lovia

    return sorted(n for n in SPECS["lovia"] if n not in getattr(lovia, "__all__", []))


@check("same_objects")
def _():
    import lovia

    pairs = [
        ("lovia.run_context", "RunContext"),
        ("lovia.runner", "Runner"),
        ("lovia.checkpointer", "RunHead"),
        ("lovia.session", "Segment"),
        ("lovia.messages", "Message"),
        ("lovia.handoff", "Handoff"),
    ]
    out = {}
    for mod, name in pairs:
        try:
            out[f"{mod}.{name}"] = getattr(importlib.import_module(mod), name) is getattr(
                lovia, name
            )
        except (ImportError, AttributeError):
            out[f"{mod}.{name}"] = "missing"
    return out


print(json.dumps(RESULTS, sort_keys=True))
