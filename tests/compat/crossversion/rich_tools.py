"""The tools and the output type both sides of the rich-file check use: ``write_rich_files.py``
(run by lovia 0.9.119) and ``read_rich_files.py`` (run by either)."""

from pydantic import BaseModel

from lovia import tool


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
def boom(x: str) -> str:
    """Fails."""
    raise ValueError("kaputt ü")


@tool
def big(n: int) -> str:
    """Big output."""
    return "héllo wörld 🌍 " * n


@tool(needs_approval=True)
def rm(path: str) -> str:
    """Remove."""
    return "removed " + path


class City(BaseModel):
    name: str
    pop: float
