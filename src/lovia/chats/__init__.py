"""Chats over a session store and a checkpointer, and the runs that answer them.

``ChatBook`` reads and maintains chats (a chat is a session id); ``RunSupervisor`` starts,
stops, resumes and settles their runs, one live run per chat, shared safely by several
servers on one database. ``lovia web`` serves them over HTTP and ``lovia chat`` in a
terminal; neither needs the other, and nothing here needs FastAPI.
"""

from __future__ import annotations

from .book import PENDING_STATUSES, ChatBook, Rewound, can_retry, chat_claim_key
from .setup import SetupCheck
from .supervisor import ChatBusy, LiveRun, RunSupervisor, entry_agent

__all__ = [
    "PENDING_STATUSES",
    "ChatBook",
    "ChatBusy",
    "LiveRun",
    "Rewound",
    "RunSupervisor",
    "SetupCheck",
    "can_retry",
    "chat_claim_key",
    "entry_agent",
]
