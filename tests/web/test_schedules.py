"""Scheduled runs (``/api/schedules``): made, changed, paused and deleted over the API; a fire
is a checkpointed run with its record; of two servers sharing one database exactly one fires
each due time."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.web import ChatStore, create_app
from lovia.web.store import ScheduleRow

from .conftest import web_app


def _agent(answers: int = 40) -> Agent:
    return Agent(name="bot", model=ScriptedProvider([text("done")] * answers))


async def _settled(store: ChatStore, source: str, count: int) -> list[Any]:
    """The run records of ``source`` once ``count`` exist and none is still running."""
    for _ in range(600):
        runs = await store.list_runs(source=source)
        if len(runs) >= count and all(r.status != "running" for r in runs):
            return list(runs)
        await asyncio.sleep(0.05)
    raise AssertionError(f"{source}: {await store.list_runs(source=source)}")


async def test_a_schedule_is_made_changed_paused_and_deleted(client_for: Any) -> None:
    c = client_for(web_app(_agent()))
    made = await c.post(
        "/api/schedules",
        json={"input": "report", "trigger_kind": "every", "trigger_expr": "3600"},
    )
    assert made.status_code == 200, made.text
    row = made.json()
    assert (row["agent"], row["active"], row["fire_count"], row["last_status"]) == (
        "bot",
        True,
        0,
        None,
    )
    assert 3590 < row["next_fire"] - time.time() <= 3600
    paused = (await c.patch(f"/api/schedules/{row['id']}", json={"active": False})).json()
    assert paused["active"] is False
    retimed = (
        await c.patch(f"/api/schedules/{row['id']}", json={"active": True, "trigger_expr": "60"})
    ).json()
    assert retimed["active"] is True and retimed["next_fire"] - time.time() <= 60
    assert [s["id"] for s in (await c.get("/api/schedules")).json()] == [row["id"]]
    assert (await c.delete(f"/api/schedules/{row['id']}")).json() == {"ok": True}
    gone = await c.get(f"/api/schedules/{row['id']}")
    assert (gone.status_code, gone.json()["detail"]["code"]) == (404, "schedule_not_found")


@pytest.mark.parametrize(
    "spec",
    [
        {"trigger_kind": "every", "trigger_expr": "0.1"},
        {"trigger_kind": "at", "trigger_expr": "not a time"},
        {"trigger_kind": "weekly", "trigger_expr": "1"},
        {"trigger_kind": "every", "trigger_expr": "60", "agent": "ghost"},
    ],
)
async def test_a_bad_schedule_is_refused_and_nothing_is_stored(
    client_for: Any, spec: dict[str, Any]
) -> None:
    c = client_for(web_app(_agent()))
    refused = await c.post("/api/schedules", json={"input": "x", **spec})
    assert refused.status_code in (404, 422), refused.text
    assert (await c.get("/api/schedules")).json() == []


async def test_a_cron_schedule_fires_at_its_next_matching_minute(client_for: Any) -> None:
    """A cron expression (croniter, in the web extra) is read in the server's local time; a
    malformed one is refused and stores nothing."""
    c = client_for(web_app(_agent()))
    made = await c.post(
        "/api/schedules",
        json={"input": "report", "trigger_kind": "cron", "trigger_expr": "*/5 * * * *"},
    )
    assert made.status_code == 200, made.text
    next_fire = made.json()["next_fire"]
    assert 0 < next_fire - time.time() <= 5 * 60
    assert time.localtime(next_fire).tm_min % 5 == 0 and time.localtime(next_fire).tm_sec == 0
    bad = await c.post(
        "/api/schedules",
        json={"input": "x", "trigger_kind": "cron", "trigger_expr": "61 * * * *"},
    )
    assert bad.status_code == 422, bad.text
    assert [s["id"] for s in (await c.get("/api/schedules")).json()] == [made.json()["id"]]


async def test_run_now_fires_a_checkpointed_run_and_records_it(tmp_path: Path) -> None:
    store = ChatStore.sqlite(tmp_path / "chats.db")
    app = create_app(_agent(), store=store, titles=False)
    from .conftest import make_client

    async with app.router.lifespan_context(app), make_client(app) as c:
        row = (
            await c.post(
                "/api/schedules",
                json={"input": "report", "trigger_kind": "every", "trigger_expr": "3600"},
            )
        ).json()
        fired = (await c.post(f"/api/schedules/{row['id']}/run")).json()
        assert fired["ok"] is True
        runs = await _settled(store, f"schedule:{row['id']}", 1)
        history = (await c.get(f"/api/schedules/{row['id']}/runs")).json()
        assert [(h["run_id"], h["status"]) for h in history] == [(runs[0].id, "completed")]
        assert history[0]["session_id"] == fired["session_id"]
        after = (await c.get(f"/api/schedules/{row['id']}")).json()
        assert (after["fire_count"], after["last_session_id"], after["last_status"]) == (
            1,
            fired["session_id"],
            "ok",
        )
        assert after["next_fire"] == row["next_fire"]  # a fire now leaves the next time
        chat = (await c.get(f"/api/sessions/{fired['session_id']}")).json()
        assert [m["content"] for m in chat["entries"]] == ["report", "done"]


async def test_two_servers_on_one_database_fire_each_due_time_once(tmp_path: Path) -> None:
    """Both servers' pollers see the same due schedules at once; each fire is claimed, so
    each schedule runs exactly once (S-schedules: a claimed, fenced row per firing)."""
    db = tmp_path / "shared.db"
    stores = [ChatStore.sqlite(db), ChatStore.sqlite(db)]
    now = time.time()
    for n in range(12):
        await stores[0].add_schedule(
            ScheduleRow(
                id=f"s{n}",
                agent="bot",
                input=f"task {n}",
                session_id=None,
                trigger_kind="every",
                trigger_expr="3600",
                next_fire=now - 5,
                active=True,
                last_session_id=None,
                created_at=now,
                updated_at=now,
            )
        )
    apps = [create_app(_agent(), store=s, titles=False, scheduler_poll=3600) for s in stores]
    async with apps[0].router.lifespan_context(apps[0]), apps[1].router.lifespan_context(apps[1]):
        deps = [a.state.deps for a in apps]
        await asyncio.gather(*(d.scheduler.tick(time.time()) for d in deps))
        for n in range(12):
            runs = await _settled(stores[0], f"schedule:s{n}", 1)
            assert len(runs) == 1, runs
            row = await stores[1].get_schedule(f"s{n}")
            assert row is not None and row.fire_count == 1 and row.next_fire > now + 3000
        assert await asyncio.gather(*(d.scheduler.tick(time.time()) for d in deps)) == [0, 0]


async def test_a_last_fire_ends_the_schedule(tmp_path: Path) -> None:
    store = ChatStore.sqlite(tmp_path / "chats.db")
    app = create_app(_agent(), store=store, titles=False, scheduler_poll=3600)
    now = time.time()
    await store.add_schedule(
        ScheduleRow(
            id="once",
            agent="bot",
            input="only once",
            session_id=None,
            trigger_kind="every",
            trigger_expr="60",
            next_fire=now - 1,
            active=True,
            last_session_id=None,
            created_at=now,
            updated_at=now,
            max_fires=1,
        )
    )
    async with app.router.lifespan_context(app):
        await app.state.deps.scheduler.tick(time.time())
        await _settled(store, "schedule:once", 1)
        row = await store.get_schedule("once")
        assert row is not None
        assert (row.active, row.finished_reason, row.fire_count) == (False, "max_fires", 1)
        assert await app.state.deps.scheduler.tick(time.time() + 120) == 0
