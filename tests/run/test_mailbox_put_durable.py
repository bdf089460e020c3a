"""``Mailbox.put`` on a run with a checkpoint is durable once it returns (issue 27, part 2):
a process killed with SIGKILL while its tool runs, right after two puts, loses neither
message; the resumed run reads each once, in order, after the tool's result."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

from lovia import Agent, CheckpointOptions, Mailbox, Runner, SQLiteCheckpointer, tool
from lovia.testing import ScriptedProvider, text

CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from lovia import Agent, CheckpointOptions, Mailbox, Runner, SQLiteCheckpointer, tool
    from lovia.testing import ScriptedProvider, call, text

    mailbox = Mailbox()

    @tool
    async def work() -> str:
        \"\"\"Works; two messages arrive meanwhile, then the process dies.\"\"\"
        await mailbox.put("m1")
        await mailbox.put("m2")
        os.kill(os.getpid(), signal.SIGKILL)
        return "never"

    async def main() -> None:
        cp = SQLiteCheckpointer(sys.argv[1])
        agent = Agent("a", model=ScriptedProvider([call("work", {})]), tools=[work])
        await Runner.run(agent, "go", mailbox=mailbox, checkpoint=CheckpointOptions(cp, "r1"))

    asyncio.run(main())
    """
)


async def test_puts_survive_sigkill_mid_tool_and_are_read_once_in_order(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, str(db), stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(child.communicate(), 120)
    assert child.returncode == -9, err

    @tool
    async def work() -> str:
        """Works."""
        return "worked"

    cp = SQLiteCheckpointer(db)
    model = ScriptedProvider([text("heard both")])
    agent = Agent("a", model=model, tools=[work])
    result = await Runner.run(agent, [], mailbox=Mailbox(), checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "heard both"
    seen = [(m.role, m.content) for m in model.calls[0] if m.role in ("user", "tool")]
    assert seen == [("user", "go"), ("tool", "worked"), ("user", "m1"), ("user", "m2")]
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "completed" and snap.head.queued == ()
    users = [e.content for e in snap.entries if getattr(e, "role", None) == "user"]
    assert users == ["go", "m1", "m2"]
    await cp.close()


async def test_put_without_a_checkpoint_is_a_push() -> None:
    """Without a checkpointer nothing can be written: ``put`` queues in memory, as push."""
    mailbox = Mailbox()
    assert await mailbox.put("later") == 1
    agent = Agent("a", model=ScriptedProvider([text("ok")]))
    result = await Runner.run(agent, "hi", mailbox=mailbox)
    assert result.output == "ok" and len(mailbox) == 0
