"""Run lovia 0.9.119's core, workspace and built-in tool example programs, unchanged, against a
local OpenAI-compatible server that plays a scripted model.

    python scripts/run_examples.py EXAMPLES_DIR [NAME ...]
    python scripts/run_examples.py --download [NAME ...]   # fetch 0.9.119's sdist first

EXAMPLES_DIR is the ``examples`` folder of 0.9.119's source distribution. ``--download``
fetches that distribution with pip into ``.cache/`` (once) and uses its folder. Each example
runs in a fresh temporary directory as ``python FILE`` with ``LOVIA_MODEL`` pointing at the
server; its stdin answers the prompts it shows (approvals, questions). The script prints one
JSON object (each example's outcome) and exits 1 if any example failed. It needs the
``examples`` extra (python-dotenv, rich, ddgs) in the interpreter that runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"


# -- the scripted model -----------------------------------------------------------------------


@dataclass
class Turn:
    """One model answer: text, or tool calls (``(name, arguments)``; ``{base}`` in a string
    argument becomes the server's URL)."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Example:
    path: str  # relative to the examples folder
    turns: list[Turn]
    stdin: str = ""
    expect_stdout: list[str] = field(default_factory=list)  # substrings of its output
    expect_tool_output: list[str] = field(default_factory=list)  # in what tools returned
    expect_files: list[str] = field(default_factory=list)  # made in its working directory
    setup: dict[str, str] = field(default_factory=dict)  # files to put there first
    expect_offered: list[str] = field(default_factory=list)  # tools every request offers


PAGE = """<html><head><title>Owl Guide</title><meta property="og:image" content="/og.png">
</head><body><h1>Barn owls</h1><p>They hunt at <b>night</b>.</p>
<img src="/img/owl.png" alt="An owl"></body></html>"""

CORE: dict[str, Example] = {
    "01": Example("01_hello.py", [Turn("Hello! Bonjour! Hola!")], expect_stdout=["Bonjour"]),
    "02": Example(
        "02_tools.py",
        turns=[
            Turn(
                calls=[
                    ("get_weather", {"city": "Tokyo"}),
                    ("convert_currency", {"amount": 100, "source": "USD", "target": "JPY"}),
                ]
            ),
            Turn(calls=[("convert_currency", {"amount": 5, "source": "GBP", "target": "JPY"})]),
            Turn(calls=[("convert_currency", {"amount": -5, "source": "USD", "target": "JPY"})]),
            Turn(text="Tokyo is 22°C; 100 USD is 15530 JPY."),
        ],
        expect_stdout=["100 USD is 15530 JPY"],
        expect_tool_output=[
            "Tokyo: 22°C",
            "15530.00 JPY",
            "no rate for GBP->JPY",
            "greater than 0",
        ],
        expect_offered=["get_weather", "convert_currency", "recall_tool_result"],
    ),
    "04": Example(
        "04_structured_output.py",
        turns=[
            Turn('{"city": "Lisbon", "temp_c": 24.5, "summary": "Sunny and warm."}'),
            Turn('{"severity": "warning", "headline": "Typhoon", "advice": "Stay in."}'),
        ],
        expect_stdout=["WeatherReport(city='Lisbon', temp_c=24.5", "[warning] Typhoon\nStay in."],
    ),
    "05": Example(
        "05_sessions.py",
        turns=[Turn("Hi Mei!"), Turn("You are Mei."), Turn("I do not know your name.")],
        expect_stdout=["A: You are Mei.", "A (other session): I do not know"],
        expect_files=["tmp/sessions.db"],
    ),
    "07": Example(
        "07_handoff.py",
        turns=[
            Turn(calls=[("transfer_to_billing", {})]),
            Turn("Billing here: refund issued."),
            Turn(calls=[("transfer_to_support", {"reason": "crash on save"})]),
            Turn("Support here: steps please?"),
        ],
        expect_stdout=[
            "[resolved by Billing]",
            "[handoff] -> Support (reason: crash on save)",
            "[resolved by Support]",
        ],
    ),
    "08": Example(
        "08_agent_as_tool.py",
        turns=[
            Turn(calls=[("translate_to_french", {"input": "Dark mode is here!"})]),
            Turn("Le mode sombre est là !"),
            Turn("EN: Dark mode is here! FR: Le mode sombre est là !"),
        ],
        expect_stdout=["FR: Le mode sombre"],
        expect_tool_output=["Le mode sombre est là !"],
    ),
    "11": Example(
        "11_hooks.py",
        turns=[Turn(calls=[("now", {})]), Turn("It is midnight UTC.")],
        expect_stdout=["[tool] -> now({})", "[tool] <- now: 2025-01-01T00:00:00Z", "[done]"],
    ),
    "12": Example(
        "12_approval.py",
        turns=[
            Turn(
                calls=[
                    ("send_email", {"to": "bob@example.com", "subject": "Hi", "body": "Hello"}),
                    ("send_email", {"to": "alice@other.org", "subject": "Hi", "body": "Hello"}),
                ]
            ),
            Turn("Sent to bob; alice was refused."),
        ],
        stdin="n\n",
        expect_stdout=["[approval needed] send_email", "[done] Sent to bob"],
        expect_tool_output=["sent to bob@example.com"],
    ),
    "13": Example(
        "13_guardrails.py",
        turns=[Turn("299,792 km/s [source]")],
        expect_stdout=["blocked input: input guardrail: input mentions an SSN", "[source]"],
    ),
    "14": Example(
        "14_reliability.py",
        turns=[Turn(calls=[("stock_quote", {"symbol": "ACME"})]), Turn("ACME is at 101.70.")],
        expect_stdout=["ACME is at 101.70.", "usage:"],
        expect_tool_output=["ACME: 101.70 (attempt 2)"],
    ),
    "15": Example(
        "15_resume.py",
        turns=[
            Turn(calls=[("fetch_chapter", {"number": 1})]),
            Turn(calls=[("fetch_chapter", {"number": 2})]),
            Turn(calls=[("fetch_chapter", {"number": 3})]),
            Turn("A stranger comes and goes with the truth."),
        ],
        expect_stdout=["crashed after fetching chapters [1]", "fetched only chapters [2, 3]"],
    ),
    "18": Example(
        "18_dependencies.py",
        turns=[Turn(calls=[("list_my_orders", {})]), Turn("Alex: A-1001 shipped.")],
        expect_stdout=["Alex: A-1001 shipped."],
        expect_tool_output=["A-1001: shipped\nA-1002: packing"],
    ),
}

EXAMPLES: dict[str, Example] = {
    **CORE,
    "19": Example(
        "19_workspace.py",
        turns=[],
        expect_stdout=["hello workspace\n", "src/app.py:2: return 42\n", "\n5\n"],
    ),
    "20": Example(
        "20_workspace_agent.py",
        turns=[
            Turn(calls=[("list_files", {"pattern": "*.py"})]),
            Turn(calls=[("shell", {"command": "ls *.py"})]),  # allowed by the example's rules
            Turn(calls=[("shell", {"command": "wc -l app.py"})]),  # asks: stdin approves
            Turn(text="app.py is the entry point; util.py holds helpers."),
        ],
        stdin="y\n",
        setup={"app.py": "print('hi')\n", "util.py": "def f():\n    return 1\n"},
        expect_stdout=["Approval needed", "tool:done shell", "app.py is the entry point"],
        expect_tool_output=["app.py  (12 bytes)", "util.py", "1 app.py"],
        expect_offered=["shell", "recall_tool_result"],  # the policy's, with a plugin's tools
    ),
    "29": Example(
        "29_data_analysis.py",
        turns=[
            Turn(
                calls=[
                    (
                        "shell",
                        {
                            "command": 'python3 -c "import sqlite3; c = sqlite3.connect('
                            "'sales.db'); print(c.execute('select count(*), "
                            "round(sum(amount)) from orders').fetchone())\""
                        },
                    )
                ]
            ),
            Turn(
                calls=[
                    (
                        "write_file",
                        {
                            "path": "report.html",
                            "content": "<html><head><script src="
                            '"https://cdn.jsdelivr.net/npm/chart.js"></script></head>'
                            "<body><h1>Sales</h1></body></html>\n",
                        },
                    )
                ]
            ),
            Turn(text="Revenue grew from 2023 to 2024; Electronics leads."),
        ],
        expect_stdout=["Database seeded", "Report saved", "Electronics leads"],
        expect_tool_output=["exit code: 0", "created report.html"],
        expect_files=["tmp/report.html", "tmp/sales.db"],
    ),
    "tools/01": Example(
        "tools/01_fetch.py",
        turns=[
            Turn(calls=[("web_fetch", {"url": "{base}/guide.html", "images": True})]),
            Turn(calls=[("web_fetch", {"url": "{base}/data.json"})]),
            Turn(text="The guide is about barn owls; the JSON lists two owls."),
        ],
        expect_stdout=["[tool] web_fetch", "barn owls"],
        expect_tool_output=["# Barn owls", "/img/owl.png", '"owls"', "BEGIN EXTERNAL CONTENT"],
    ),
    "tools/02": Example(
        "tools/02_time.py",
        turns=[Turn(calls=[("now", {"tz": "Asia/Tokyo"})]), Turn(text="It is evening in Tokyo.")],
        expect_stdout=["It is evening in Tokyo."],
        expect_tool_output=["+09:00"],
    ),
    "tools/03": Example(
        "tools/03_search.py",
        turns=[
            Turn(calls=[("web_search", {"query": "who wrote SQLite"})]),
            Turn(text="D. Richard Hipp wrote SQLite."),
        ],
        expect_stdout=["[tool] web_search", "Richard Hipp"],
        expect_tool_output=["DuckDuckGo search failed"],  # the search has no way out
    ),
    "tools/04": Example(
        "tools/04_human.py",
        turns=[
            Turn(calls=[("ask_human", {"question": "For how many people?"})]),
            Turn(text="Booked a table for 4 at 8pm."),
        ],
        stdin="4\n",
        expect_stdout=["For how many people?", "Booked a table for 4"],
        expect_tool_output=["4"],
    ),
}


class ModelServer:
    """Chat Completions on 127.0.0.1: each POST takes the next scripted turn and streams it;
    every request body is kept. It also serves two pages for the fetch example."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def play(self, turns: list[Turn]) -> None:
        with self._lock:
            self.turns, self.requests, self.errors = list(turns), [], []

    def next_turn(self, body: dict[str, Any]) -> Turn | None:
        with self._lock:
            self.requests.append(body)
            return self.turns.pop(0) if self.turns else None

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            pages = {
                "/guide.html": ("text/html; charset=utf-8", PAGE),
                "/data.json": ("application/json", '{"owls": ["barn", "snowy"]}'),
            }
            kind, body = pages.get(self.path, ("text/plain", "not here"))
            data = body.encode()
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            turn = server.next_turn(body)
            if turn is None:
                server.errors.append("the model was called more often than scripted")
                turn = Turn(text="(the script ran dry)")
            events = _chunks(turn, server.base)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in [*events, "[DONE]"]:
                data = f"data: {event}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return json.dumps(
        {
            "id": "chatcmpl-example",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": "test-model",
            "choices": choices,
            "usage": usage,
        }
    )


def _fill(value: Any, base: str) -> Any:
    if isinstance(value, str):
        return value.replace("{base}", base)
    if isinstance(value, dict):
        return {k: _fill(v, base) for k, v in value.items()}
    return value


def _chunks(turn: Turn, base: str) -> list[str]:
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if turn.calls:
        calls = [
            {
                "index": n,
                "id": f"call_{n}_{name}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(_fill(args, base))},
            }
            for n, (name, args) in enumerate(turn.calls)
        ]
        head = _chunk({"role": "assistant", "content": None, "tool_calls": calls})
        return [head, _chunk({}, "tool_calls"), _chunk(None, usage=usage)]
    first = _chunk({"role": "assistant", "content": turn.text or ""})
    return [first, _chunk({}, "stop"), _chunk(None, usage=usage)]


# -- running the examples ---------------------------------------------------------------------


def _refused_proxy() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def _tool_outputs(requests: list[dict[str, Any]]) -> str:
    texts = []
    for body in requests:
        for message in body.get("messages", []):
            if message.get("role") == "tool":
                texts.append(str(message.get("content")))
    return "\n".join(texts)


def run_example(server: ModelServer, folder: Path, example: Example, python: str) -> dict[str, Any]:
    """Run one example in a temporary directory; its outcome and what went wrong, if anything."""
    server.play(example.turns)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        for name, content in example.setup.items():
            (cwd / name).write_text(content)
        env = {
            **os.environ,
            "LOVIA_MODEL": "openai:test-model",
            "OPENAI_BASE_URL": f"{server.base}/v1",
            "OPENAI_API_KEY": "sk-example",
            "DDGS_PROXY": _refused_proxy(),  # a search goes nowhere rather than online
            "PYTHONIOENCODING": "utf-8",
            "COLUMNS": "200",
        }
        started = time.monotonic()
        try:
            done = subprocess.run(
                [python, str(folder / example.path)],
                input=example.stdin,
                capture_output=True,
                text=True,
                cwd=cwd,
                env=env,
                timeout=300,
            )
        except subprocess.TimeoutExpired:
            return {"ok": False, "problems": ["timed out after 300 s"]}
        problems = []
        if done.returncode != 0:
            problems.append(f"exit code {done.returncode}: {done.stderr[-1500:]}")
        problems += [f"stdout lacks {s!r}" for s in example.expect_stdout if s not in done.stdout]
        tools = _tool_outputs(server.requests)
        missing = [s for s in example.expect_tool_output if s not in tools]
        problems += [f"no tool returned {s!r}" for s in missing]
        problems += [f"{f} was not made" for f in example.expect_files if not (cwd / f).exists()]
        for body in server.requests:
            offered = {t["function"]["name"] for t in body.get("tools") or []}
            problems += [
                f"a request offered no {n}" for n in example.expect_offered if n not in offered
            ]
        problems += server.errors
        if server.turns:
            problems.append(f"{len(server.turns)} scripted turn(s) never asked for")
    return {
        "ok": not problems,
        "seconds": round(time.monotonic() - started, 2),
        "model_calls": len(server.requests),
        "problems": problems,
        **({"stdout_tail": done.stdout[-800:]} if problems else {}),
    }


def download_examples() -> Path:
    """0.9.119's examples folder, from its source distribution (fetched with pip, once)."""
    folder = CACHE / "lovia-0.9.119" / "examples"
    if folder.is_dir():
        return folder
    with tempfile.TemporaryDirectory() as tmp:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*pip, "lovia==0.9.119", "-d", tmp], check=True)
        (sdist,) = Path(tmp).glob("lovia-0.9.119.tar.gz")
        with tarfile.open(sdist) as tar:
            tar.extractall(CACHE, filter="data")
    if not folder.is_dir():
        shutil.rmtree(CACHE / "lovia-0.9.119", ignore_errors=True)
        raise SystemExit("the downloaded distribution has no examples folder")
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, help="0.9.119's examples folder")
    parser.add_argument("names", nargs="*", help=f"examples to run (default: {' '.join(EXAMPLES)})")
    parser.add_argument("--download", action="store_true", help="fetch 0.9.119's examples")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run them")
    parser.add_argument(
        "--fetch-only", action="store_true", help="with --download: fetch, print the folder, stop"
    )
    args = parser.parse_args()
    if args.download and args.fetch_only:
        print(download_examples())
        return 0
    if args.download:
        if args.folder is not None:
            args.names.insert(0, str(args.folder))
        folder = download_examples()
    elif args.folder is None:
        parser.error("give the examples folder, or --download")
    else:
        folder = args.folder
    names = args.names or list(EXAMPLES)
    unknown = [n for n in names if n not in EXAMPLES]
    if unknown:
        parser.error(f"no script for {unknown}; known: {', '.join(EXAMPLES)}")
    server = ModelServer()
    try:
        results = {n: run_example(server, folder, EXAMPLES[n], args.python) for n in names}
    finally:
        server.close()
    print(json.dumps(results, indent=2))
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
