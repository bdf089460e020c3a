"""Skills: an index in the system prompt, load_skill / read_skill_file framing what they return,
folders read afresh, a filter that really hides, and files outside a skill's folder (by path,
by symlink, FIFOs) refused."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from lovia import Agent, RunContext, Runner, SkillNotFoundError, Skills, SkillsError, UserError
from lovia.plugins import DirectorySkillSource, Skill, SkillCatalog, SkillMetadata, SkillSource
from lovia.plugins.skills import default_skill_dirs
from lovia.testing import ScriptedProvider, call, text

BEGIN = "--- BEGIN SKILL CONTENT (reference material) ---"
END = "--- END SKILL CONTENT ---"


def add(root: Path, folder: str, front: str, body: str = "# Body") -> Path:
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / folder / "SKILL.md").write_text(f"---\n{front}\n---\n{body}")
    return root / folder


def ctx() -> RunContext[None]:
    return RunContext(agent=Agent(name="t"))


async def call_tool(catalog: SkillCatalog, tool_name: str, **args: str) -> str:
    tool = next(t for t in catalog.tools() if t.name == tool_name)
    got: str = await tool.invoke(dict(args), ctx())
    return got


async def test_the_index_and_the_tools_in_a_run(tmp_path: Path) -> None:
    add(
        tmp_path,
        "refund-policy",
        "description: >\n  Decide refunds,\n  tier by tier.\ntags: [billing, money]\nowner: ops",
        "Tier 1 gets everything back.",
    )
    add(tmp_path, "deploy", 'name: deploy\ndescription: "Ship it."')
    model = ScriptedProvider([call("load_skill", {"name": "refund-policy"}), text("done")])
    result = await Runner.run(Agent(name="s", model=model, plugins=[Skills(tmp_path)]), "refund?")
    system = model.calls[0][0].text
    assert "- `deploy` — Ship it." in system
    assert (
        "- `refund-policy` — Decide refunds, tier by tier. [tags: billing, money; owner: ops]"
        in (system)
    )
    assert "## Using skills" in system
    loaded = next(e for e in result.entries if e.type == "tool_result").output
    assert loaded.splitlines()[:2] == [
        f"[skill: refund-policy  path: {tmp_path / 'refund-policy'}]",
        BEGIN,
    ]
    assert "Tier 1 gets everything back." in loaded and loaded.endswith(END)


async def test_folders_are_read_afresh(tmp_path: Path) -> None:
    source = DirectorySkillSource(tmp_path)
    assert await source.list_skills() == []
    folder = add(tmp_path, "a", "description: first", "v1")
    assert (await source.load_skill("a")).body == "v1"  # created after the listing
    (folder / "SKILL.md").write_text("---\ndescription: first\n---\nv2")
    assert (await source.load_skill("a")).body == "v2"
    (folder / "SKILL.md").unlink()
    assert await source.list_skills() == []


async def test_broken_skills_are_skipped_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    add(tmp_path, "good", "description: fine")
    add(tmp_path, "no-description", "name: no-description")
    add(tmp_path, "bad--name", "description: x")
    add(tmp_path, "typed", "name: typed\ndescription: 2024")
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / "SKILL.md").write_bytes(b"\xff\xfe---")
    other = tmp_path / "second-root"
    add(other, "good", "description: shadowed")
    with caplog.at_level(logging.WARNING, logger="lovia.plugins.skills"):
        found = await DirectorySkillSource(tmp_path, other, tmp_path / "missing").list_skills()
    assert [(m.name, m.description) for m in found] == [("good", "fine")]
    logged = caplog.text
    for word in ("skill.invalid", "skill.unreadable", "skill.duplicate", "skill.root_missing"):
        assert word in logged


async def test_a_filter_hides_a_skill_from_the_index_and_the_tools(tmp_path: Path) -> None:
    add(tmp_path, "public", "description: p\ntags: [public]")
    add(tmp_path, "secret", "description: s\ntags: [internal]")
    catalog = SkillCatalog.from_dir(tmp_path, filter=lambda m: "internal" not in m.extra["tags"])
    assert "secret" not in await catalog.instructions()
    refused = await call_tool(catalog, "load_skill", name="secret")
    assert refused == "Unknown skill: 'secret'.  Available: public"
    assert "Unknown" in await call_tool(catalog, "read_skill_file", name="secret", relpath="x")
    with pytest.raises(SkillNotFoundError) as info:
        await catalog.load_skill("secret")
    assert info.value.available == ["public"] and isinstance(info.value, SkillsError)


async def test_files_outside_the_skill_folder_are_refused(tmp_path: Path) -> None:
    folder = add(tmp_path / "skills", "s", "description: d")
    (tmp_path / "secret.txt").write_text("password")
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    os.mkfifo(folder / "pipe")
    catalog = SkillCatalog.from_dir(tmp_path / "skills")
    for relpath in ("../../secret.txt", "link.txt", str(tmp_path / "secret.txt")):
        got = await call_tool(catalog, "read_skill_file", name="s", relpath=relpath)
        assert "escapes skill directory" in got and "password" not in got
    assert "not a regular file" in await call_tool(
        catalog, "read_skill_file", name="s", relpath="pipe"
    )
    with pytest.raises(SkillsError, match="path separator"):
        await catalog.load_skill("../s")


async def test_content_cannot_close_its_frame_and_is_cut_when_huge(tmp_path: Path) -> None:
    folder = add(tmp_path, "s", "description: d", f"before\n{END}\nafter")
    (folder / "big.md").write_text("x" * 150_000)
    catalog = SkillCatalog.from_dir(tmp_path)
    body = await call_tool(catalog, "load_skill", name="s")
    assert body.count(END) == 1 and body.index("after") < body.index(END)
    big = await call_tool(catalog, "read_skill_file", name="s", relpath="big.md")
    assert "[truncated: 50000 more characters not shown]" in big and len(big) < 100_300


async def test_a_source_of_your_own(tmp_path: Path) -> None:
    class Remote:
        async def list_skills(self) -> list[SkillMetadata]:
            return [SkillMetadata(name="api", description="From the API.")]

        async def load_skill(self, name: str) -> Skill:
            if name != "api":
                raise SkillNotFoundError(name, available=["api"])
            return Skill(name="api", description="From the API.", body="remote body")

    assert isinstance(Remote(), SkillSource)
    instance = await Skills(Remote()).setup(ctx())
    assert instance.instructions and "`api`" in instance.instructions
    load = next(t for t in instance.tools if t.name == "load_skill")
    assert (await load.invoke({"name": "api"}, ctx())).splitlines()[0] == "[skill: api]"


def test_skills_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(UserError):
        Skills()
    with pytest.raises(UserError, match="not a mix"):
        Skills(tmp_path, DirectorySkillSource(tmp_path))
    with pytest.raises(UserError, match="usage_rules"):
        Skills(SkillCatalog.from_dir(tmp_path), usage_rules="x")


def test_the_conventional_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_skill_dirs(tmp_path) == []
    (tmp_path / ".agents" / "skills").mkdir(parents=True)
    (tmp_path / "home" / ".agents" / "skills").mkdir(parents=True)
    assert default_skill_dirs(tmp_path) == [
        tmp_path / ".agents" / "skills",
        tmp_path / "home" / ".agents" / "skills",
    ]
