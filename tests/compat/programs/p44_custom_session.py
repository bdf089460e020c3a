"""A user's own Session store (the four-method protocol) behind the runner."""

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


from lovia import Agent, Runner, Segment, Session
from lovia.testing import ScriptedProvider, text


class DictSession:
    """What a user writes to keep conversations in their own store."""

    def __init__(self):
        self.data = {}
        self.appends = []

    async def segments(self, session_id):
        return list(self.data.get(session_id, []))

    async def load(self, session_id):
        return [e for seg in self.data.get(session_id, []) for e in seg.entries]

    async def append(self, session_id, entries, *, run_id=None, meta=None):
        self.appends.append([session_id, bool(run_id), sorted((meta or {}).keys())])
        segs = self.data.setdefault(session_id, [])
        if run_id is not None and any(s.run_id == run_id for s in segs):
            return
        segs.append(Segment(run_id=run_id, entries=list(entries), meta=meta))

    async def clear(self, session_id):
        self.data.pop(session_id, None)


class Subclassed(Session):
    """Subclassing the protocol: load() comes for free."""

    def __init__(self):
        self.segs = {}

    async def segments(self, session_id):
        return list(self.segs.get(session_id, []))

    async def append(self, session_id, entries, *, run_id=None, meta=None):
        self.segs.setdefault(session_id, []).append(
            Segment(run_id=run_id, entries=list(entries), meta=meta)
        )

    async def clear(self, session_id):
        self.segs.pop(session_id, None)


@check("dict_session")
def _():
    s = DictSession()
    Runner.run_sync(
        Agent(name="a", model=ScriptedProvider([text("one")])), "first", session=s, session_id="u"
    )
    p = ScriptedProvider([text("two")])
    Runner.run_sync(Agent(name="a", model=p), "second", session=s, session_id="u")
    return [s.appends, [[m.role, m.content] for m in p.calls[0]]]


@check("subclassed_session")
def _():
    s = Subclassed()
    Runner.run_sync(
        Agent(name="a", model=ScriptedProvider([text("one")])), "first", session=s, session_id="u"
    )
    p = ScriptedProvider([text("two")])
    Runner.run_sync(Agent(name="a", model=p), "second", session=s, session_id="u")

    async def flat():
        return [e.type for e in await s.load("u")]

    return [[[m.role, m.content] for m in p.calls[0]], asyncio.run(flat())]


@check("segment_fields")
def _():
    seg = Segment(run_id="r", entries=[])
    return [seg.run_id, seg.entries, seg.meta]


print(json.dumps(RESULTS, sort_keys=True))
