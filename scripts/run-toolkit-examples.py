"""Run lovia 0.9.119's toolkit examples, unchanged, against a local OpenAI-compatible server.

    .venv/bin/python scripts/run-toolkit-examples.py EXAMPLES_DIR [NAME ...]

EXAMPLES_DIR is the ``examples`` folder of lovia 0.9.119's source distribution. The script
starts a Chat Completions server on 127.0.0.1 (a free port) that plays a plausible model by
rules: it calls the tools a request offers (todo_write, load_skill / read_skill_file,
remember, spawn_subagent / wait_subagents, update_profile, lookup_order / issue_refund) and
answers the JSON a structured-output request asks for. Each example runs in a fresh
temporary folder with ``LOVIA_MODEL`` and ``OPENAI_BASE_URL`` pointing at that server; the
script prints one line per example and exits non-zero when one fails (a non-zero exit, or
output lacking what ``EXPECT`` says it shows).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT = [
    "21_todos.py",
    "22_skills.py",
    "23_memory.py",
    "25_custom_plugin.py",
    "28_eval.py",
    "30_subagents.py",
    "30_support_bot.py",
]
ARGS = {"30_support_bot.py": ["--demo"]}
# what an example's output must say: the tree total counts both children's tokens (15 per call)
EXPECT = {"30_subagents.py": "[usage: 90 tokens, tree total]"}
TIMEOUT = 180


# -- the model's rules --------------------------------------------------------------------


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _called(messages: list[dict[str, Any]], name: str) -> int:
    return sum(
        1
        for m in messages
        for c in m.get("tool_calls") or []
        if c.get("function", {}).get("name") == name
    )


def _since_user(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages after the last real user message (reminders are not real)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "user" and not _text(m).startswith(("<system-reminder>", "[sub")):
            return messages[i:]
    return messages


def _instance(schema: dict[str, Any], conversation: str, key: str = "") -> Any:
    """A JSON value fitting ``schema``, filled from the conversation where a field's name
    says what it wants (facts, summary, queries, notes, score)."""
    kind = schema.get("type")
    if "anyOf" in schema:
        return _instance(schema["anyOf"][0], conversation, key)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: _instance(v, conversation, k) for k, v in props.items()}
    if kind == "array":
        if key == "facts":
            said = re.findall(r"USER: Remember (?:that )?(.+?)(?:\.|$)", conversation, re.M)
            return [f"The user says: {s}" for s in said][:2]
        if key == "queries":
            return [conversation.strip()[:60]]
        if key == "notes":
            return re.findall(r"^- (.+)$", conversation, re.M)
        return []
    if kind in ("number", "integer"):
        return 0.9 if key == "score" else 1
    if kind == "boolean":
        return True
    if key == "summary":
        first = re.search(r"USER: (.+)", conversation)
        return f"The user talked about: {first.group(1)[:200]}" if first else "A short chat."
    return "ok"


def _structured(messages: list[dict[str, Any]]) -> Any:
    system = _text(messages[0]) if messages and messages[0].get("role") == "system" else ""
    found = re.search(r"JSON Schema:\n\n(\{.*\})\n", system)
    if found is None:
        return None
    conversation = "\n".join(_text(m) for m in messages[1:])
    return _instance(json.loads(found.group(1)), conversation)


def _tool_rule(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    messages = body["messages"]
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    turn = _since_user(messages)
    said = _text(turn[0]) if turn else ""
    system = _text(messages[0]) if messages else ""
    plan = [
        {"content": "Design the data model", "status": "completed"},
        {"content": "Add the endpoints", "status": "in_progress", "active_form": "Adding"},
        {"content": "Write the tests"},
    ]
    rules: list[tuple[str, bool, dict[str, Any]]] = [
        (
            "todo_write",
            _called(turn, "todo_write") < 2,
            {"todos": plan[: 2 + _called(turn, "todo_write")]},
        ),
        (
            "remember",
            "remember" in said.lower() and not _called(turn, "remember"),
            {"fact": said[:120]},
        ),
        (
            "update_profile",
            "vegetarian" in said and not _called(turn, "update_profile"),
            {"key": "diet", "value": "vegetarian"},
        ),
        (
            "lookup_order",
            bool(re.search(r"A-\d{4}", said)) and not _called(turn, "lookup_order"),
            {"order_id": (re.findall(r"A-\d{4}", said) or ["A-1001"])[0]},
        ),
        (
            "issue_refund",
            "money back" in said and not _called(turn, "issue_refund"),
            {
                "order_id": (re.findall(r"A-\d{4}", said) or ["A-1001"])[0],
                "reason": "arrived broken",
            },
        ),
        (
            "spawn_subagent",
            _called(turn, "spawn_subagent") < 2,
            {
                "prompt": ["Research the Python 3.13 free-threading build.", "Research PyPy."][
                    min(_called(turn, "spawn_subagent"), 1)
                ]
            },
        ),
        (
            "wait_subagents",
            _called(turn, "spawn_subagent") >= 2 and not _called(turn, "wait_subagents"),
            {},
        ),
    ]
    skill = re.search(r"- `([^`]+)` —", system)
    if skill:
        rules.append(("load_skill", not _called(turn, "load_skill"), {"name": skill.group(1)}))
        rules.append(
            (
                "read_skill_file",
                not _called(turn, "read_skill_file"),
                {"name": skill.group(1), "relpath": "references/international-orders.md"},
            )
        )
    for name, due, args in rules:
        if name in offered and due:
            return name, args
    return None


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for one Chat Completions request."""
    found = _tool_rule(body)
    if found is not None:
        name, args = found
        n = len(body["messages"])
        call = {
            "id": f"call_{n}_{name}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    structured = _structured(body["messages"])
    if structured is not None:
        return {"role": "assistant", "content": json.dumps(structured)}
    results = [_text(m) for m in body["messages"] if m.get("role") == "tool"]
    tail = f" (last tool said: {results[-1][:120]})" if results else ""
    return {"role": "assistant", "content": f"Here is my answer{tail}."}


# -- the server ---------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        if self.path.endswith("/embeddings"):
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [
                {"index": i, "embedding": [float(len(t) % 7), 1.0, 0.5]}
                for i, t in enumerate(inputs)
            ]
            return self._json({"data": data})
        message = reply(body)
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        if not body.get("stream"):
            return self._json(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        delta = {k: v for k, v in message.items() if v is not None}
        for call in delta.get("tool_calls", []):
            call["index"] = 0
        chunks = [
            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {"choices": [], "usage": usage},
        ]
        for chunk in chunks:
            chunk.update({"id": "x", "object": "chat.completion.chunk", "model": body.get("model")})
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def _json(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    examples = Path(argv[0]).resolve()
    names = argv[1:] or DEFAULT
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOVIA_", "OPENAI_"))}
    env.update(
        LOVIA_MODEL="openai:local-test-model", OPENAI_BASE_URL=url, OPENAI_API_KEY="sk-local"
    )
    failed = 0
    for name in names:
        with tempfile.TemporaryDirectory() as work:
            done = subprocess.run(
                [sys.executable, str(examples / name), *ARGS.get(name, [])],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
        ok = done.returncode == 0 and EXPECT.get(name, "") in done.stdout
        failed += not ok
        last = (done.stdout.strip().splitlines() or [""])[-1][:100]
        said = last if ok else (done.stdout + done.stderr).strip()[-600:]
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {said}")
    server.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
