"""The public surface: one curated ``__all__``, every error exported, layering enforced."""

from __future__ import annotations

import ast
import inspect
import pathlib
import subprocess
import sys

import lovia
from lovia import errors

SRC = pathlib.Path(lovia.__file__).parent


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert list(lovia.__all__) == sorted(lovia.__all__)
    assert len(set(lovia.__all__)) == len(lovia.__all__)
    for name in lovia.__all__:
        assert getattr(lovia, name) is not None, name


def test_dir_lists_every_public_name_and_no_typing_helpers() -> None:
    # in a fresh interpreter: the lazily imported stores and providers are not loaded yet
    code = "import lovia; print(' '.join(dir(lovia)))"
    names = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert set(lovia.__all__) <= names
    assert {"SQLiteSession", "PostgresCheckpointer", "__version__"} <= names
    assert not names & {"Any", "TYPE_CHECKING", "annotations"}


def test_every_exception_is_exported_and_has_a_hint_attribute() -> None:
    for name, obj in vars(errors).items():
        if inspect.isclass(obj) and issubclass(obj, errors.LoviaError):
            assert name in lovia.__all__, name
    assert errors.UserError("x", hint="do y").hint == "do y"
    assert "do y" in str(errors.UserError("x", hint="do y"))


def test_import_lovia_needs_no_optional_extra() -> None:
    code = (
        "import sys, lovia, lovia.testing, lovia.events, lovia.transcript\n"
        "bad = [m for m in ('fastapi', 'uvicorn', 'psycopg', 'openai', 'anthropic')"
        " if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_import_lovia_leaves_the_http_client_for_when_it_is_used() -> None:
    """httpx (and the CLI libraries its import pulls in when installed) is a third of the
    objects `import lovia` would create: every full garbage collection walks them."""
    code = (
        "import sys, lovia, lovia.testing, lovia.context\n"
        "from lovia.tools import web_fetch, web_search\n"
        "bad = [m for m in ('httpx', 'rich', 'click') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _imports(path: pathlib.Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_drivers_are_imported_only_behind_their_ports() -> None:
    """SQL only in stores/, HTTP SDKs only in providers/, web frameworks only in web/."""
    allowed = {
        "sqlite3": ("stores",),
        "psycopg": ("stores",),
        "procrastinate": ("stores",),
        "psycopg_pool": ("stores",),
        "openai": ("providers",),
        "anthropic": ("providers",),
        "fastapi": ("web",),
        "starlette": ("web",),
        "uvicorn": ("web", "cli"),
    }
    offenders = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).parts
        for name in _imports(path):
            root = name.split(".")[0]
            if root in allowed and rel[0].removesuffix(".py") not in allowed[root]:
                offenders.append(f"{'/'.join(rel)} imports {name}")
    assert not offenders, offenders


def test_stores_know_nothing_of_the_loop() -> None:
    for path in (SRC / "stores").rglob("*.py"):
        text = path.read_text()
        assert "from ..run" not in text and "lovia.run" not in text, path


def test_providers_module_exports_the_provider_classes_and_settings() -> None:
    import lovia.providers as providers
    from lovia import ModelSettings
    from lovia.providers.anthropic import AnthropicProvider
    from lovia.providers.openai import OpenAIChatProvider

    assert providers.ModelSettings is ModelSettings
    assert providers.OpenAIChatProvider is OpenAIChatProvider
    assert providers.AnthropicProvider is AnthropicProvider
    assert {"Provider", "model_from_env", "ModelSettings"} <= set(providers.__all__)
