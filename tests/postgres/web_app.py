"""A web app on PostgreSQL for the two-process test: ``uvicorn --factory
tests.postgres.web_app:make_app``; the DSN and table prefix come from the environment."""

from __future__ import annotations

import os
from typing import Any

from lovia.demo import demo_agent
from lovia.stores import open_stores
from lovia.web import ChatStore, create_app


def make_app() -> Any:
    session, checkpointer = open_stores(
        os.environ["LOVIA_TEST_POSTGRES_DSN"], table_prefix=os.environ["LOVIA_TEST_PREFIX"]
    )
    return create_app(
        demo_agent(delay=0), store=ChatStore(session, checkpointer=checkpointer), titles=False
    )
