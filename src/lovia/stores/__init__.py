"""Durable state: session stores (conversations) and checkpointers (runs)."""
