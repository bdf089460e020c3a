"""``take_claim`` when the lease store refuses the claim but names no holder.

That happens for a moment when the holder lets go between the two calls, and for as long as
it lasts with a lease store that cannot say who holds a key (a custom one, or a read that lags
the write). The retry used to come at once, every time: a loop that kept the event loop busy
for the whole ``BRIEF_WAIT_S``. It now backs off to the brief-holder poll.
"""

from __future__ import annotations

import pytest

import lovia.chats.claims as claims
from lovia.chats import ChatBusy
from lovia.chats.claims import take_claim
from lovia.stores.lease import LeaseStore


class NamelessLeases:
    """A lease store (the public ``LeaseStore`` protocol) that refuses the first
    ``refusals`` acquires and never says who holds a key."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.attempts = 0
        self.held: dict[str, str] = {}

    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        self.attempts += 1
        if self.attempts <= self.refusals:
            return False
        self.held[run_id] = owner
        return True

    async def renew_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        return self.held.get(run_id) == owner

    async def release_lease(self, run_id: str, owner: str) -> None:
        if self.held.get(run_id) == owner:
            del self.held[run_id]

    async def lease_holder(self, run_id: str) -> str | None:
        return None


async def test_a_store_that_keeps_refusing_is_retried_with_backoff_then_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(claims, "BRIEF_WAIT_S", 0.5)
    store = NamelessLeases(refusals=10**9)
    assert isinstance(store, LeaseStore)
    with pytest.raises(ChatBusy):
        await take_claim(store, "c1", ttl=30.0, brief=False)
    # backing off to a 50 ms poll, half a second allows a few dozen tries at most;
    # retrying at once made tens of thousands
    assert 2 <= store.attempts <= 100, store.attempts


async def test_a_holder_that_left_in_between_is_retried_and_the_claim_taken() -> None:
    store = NamelessLeases(refusals=3)
    lease = await take_claim(store, "c1", ttl=30.0, brief=True)
    try:
        assert lease.held
        assert store.attempts == 4
        assert store.held[claims.chat_claim_key("c1")].endswith(claims.BRIEF_MARK)
    finally:
        await lease.release()
    assert store.held == {}
