"""Other vendors' prefixes (register_provider), provider_from_string, supports_vision and the
module paths of the providers and stores (lovia.stores.checkpointer, lovia.stores.session), as
0.9.119 programs use them."""

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


import os

for _var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
    os.environ.pop(_var, None)

from lovia import Agent, ImagePart, Runner, TextPart, UserError, assistant, user
from lovia.testing import ScriptedProvider, text


@check("registered_prefix_runs")
def _():
    from lovia.providers import register_provider

    made = []

    def factory(model):
        made.append(model)
        return ScriptedProvider([text("from " + model)])

    register_provider("AcmeCo", factory)
    result = Runner.run_sync(Agent(name="a", model="acmeco:big-1"), "hi")
    return {"output": result.output, "made": made}


@check("later_registration_wins")
def _():
    from lovia.providers import provider_from_string, register_provider

    register_provider("twice", lambda model: ScriptedProvider([text("one")]))
    register_provider("twice", lambda model: ScriptedProvider([text("two")]))
    return Runner.run_sync(Agent(name="a", model=provider_from_string("twice:m")), "hi").output


@check("unknown_prefix")
def _():
    from lovia.providers import provider_from_string

    try:
        provider_from_string("nosuchvendor:m")
    except UserError as exc:
        full = str(exc) + " " + str(getattr(exc, "hint", "") or "")
        return {"raised": "UserError", "names_register_provider": "register_provider" in full}
    return "no error"


@check("factory_without_keywords")
def _():
    from lovia.providers import provider_from_string, register_provider

    register_provider("plain", lambda model: ScriptedProvider([]))
    out = {"empty_extra_body": type(provider_from_string("plain:m", extra_body={})).__name__}
    try:
        provider_from_string("plain:m", api_key="k")
        out["api_key"] = "accepted"
    except UserError as exc:
        out["api_key"] = "does not accept" in str(exc)
    return out


@check("builtin_prefixes_with_overrides")
def _():
    from lovia.providers import AnthropicProvider, OpenAIChatProvider, provider_from_string

    out = {}
    for spec in ("openai:m1", "oai:m1", "openai-chat:m1", "anthropic:m1", "claude:m1", "bare"):
        p = provider_from_string(spec, api_key="sk-x", base_url="http://127.0.0.1:9/v1")
        kind = "openai" if isinstance(p, OpenAIChatProvider) else None
        kind = kind or ("anthropic" if isinstance(p, AnthropicProvider) else type(p).__name__)
        out[spec] = [kind, p.model]
    return out


@check("supports_vision")
def _():
    from lovia.providers import OpenAIChatProvider, provider_from_string, supports_vision

    local = "http://127.0.0.1:9/v1"
    return {
        "official": supports_vision(OpenAIChatProvider("m", api_key="k")),
        "compatible": supports_vision(OpenAIChatProvider("m", api_key="k", base_url=local)),
        "forced": supports_vision(
            provider_from_string("vl", api_key="k", base_url=local, supports_vision=True)
        ),
        "object": supports_vision(object()),
        "none": supports_vision(None),
    }


@check("message_to_openai")
def _():
    from lovia.providers.openai_chat import message_to_openai

    return [
        message_to_openai(user([TextPart("hello"), ImagePart(url="https://x/y.png")])),
        message_to_openai(user("plain")),
        message_to_openai(assistant("answer")),
    ]


@check("same_objects")
def _():
    import lovia
    import lovia.providers as providers
    import lovia.stores as stores
    from lovia.providers.anthropic import AnthropicProvider
    from lovia.providers.base import ModelSettings
    from lovia.providers.openai_chat import OpenAIChatProvider
    from lovia.stores.checkpointer import InMemoryCheckpointer, SQLiteCheckpointer

    return {
        "ModelSettings": ModelSettings is lovia.ModelSettings,
        "OpenAIChatProvider": OpenAIChatProvider is providers.OpenAIChatProvider,
        "AnthropicProvider": AnthropicProvider is providers.AnthropicProvider,
        "SQLiteCheckpointer": SQLiteCheckpointer is stores.SQLiteCheckpointer,
        "InMemoryCheckpointer": InMemoryCheckpointer is stores.InMemoryCheckpointer,
        "providers_all": sorted(
            n
            for n in ["provider_from_string", "register_provider", "supports_vision"]
            if n in providers.__all__
        ),
        "stores_all_lacks": [
            n
            for n in [
                "InMemoryCheckpointer",
                "InMemorySession",
                "SQLiteCheckpointer",
                "SQLiteSession",
            ]
            if n not in stores.__all__
        ],
    }


@check("stores_session_module")
def _():
    import lovia.stores as stores
    from lovia.stores.session import InMemorySession, SQLiteSession

    return [InMemorySession is stores.InMemorySession, SQLiteSession is stores.SQLiteSession]


print(json.dumps(RESULTS, sort_keys=True))
