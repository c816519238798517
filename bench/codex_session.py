"""What Codex CLI sends over a ten-turn session against the local Worker: requests per turn,
body sizes and their growth, the peak request rate, and any request a limit refused.

    python bench/codex_session.py                 # one session at full speed, one at the default pace
    python bench/codex_session.py --paces 0 --turns 4

A logging proxy sits between Codex and the Worker (the local runtime with the offline
emulator) and records each request's shape, never its text: sizes and counts only. The
first turn is `codex exec`, the rest `codex exec resume --last` in the same CODEX_HOME and
working directory; every other prompt holds "command", so the emulator calls Codex's
`exec_command` and Codex sends its result back (a second request in that turn). Prints a
markdown table per run and writes bench/results/codex_session.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.harness.pool import RuntimePool  # noqa: E402
from tests.harness.runtime import RuntimeOptions, wrangler_config  # noqa: E402
from tests.openai_api.codex import API_KEY_ENV, MODEL, config_toml, ensure_codex  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "codex_session.json"
# Even turns make the emulator call exec_command ("command" is one of its name words); the
# others avoid every word of Codex's tool names (input, image, agent, list, plan, ...).
PROMPTS = (
    "Run a command to show the date",
    "Say hello to the team",
    "Run a command to print the working directory",
    "Explain in one sentence what a Worker is",
    "Use a command to count the lines in the readme",
    "How are you today?",
    "Run a command that prints the kernel version",
    "Summarise our conversation so far",
    "Run one more command to show the uptime",
    "Thanks, that is all for now",
)
TURN_TIMEOUT_S = 300
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "proxy-connection", "upgrade"}
TEXT_KEYS = ("text", "arguments", "output")  # where input items carry text (counted, never kept)


def text_chars(value: Any) -> int:
    """Characters of text in input items, roughly as the Worker counts them against its limit."""
    if isinstance(value, list):
        return sum(text_chars(item) for item in value)
    if isinstance(value, dict):
        return sum(len(v) if k in TEXT_KEYS and isinstance(v, str) else text_chars(v) for k, v in value.items())
    return 0


def shape(body: bytes) -> dict[str, Any]:
    """Sizes and counts of a Responses request body; nothing of its text."""
    try:
        payload = json.loads(body) if body else {}
    except ValueError:
        return {"parsed": False}
    items = payload.get("input") if isinstance(payload, dict) else None
    items = items if isinstance(items, list) else []
    instructions = payload.get("instructions") if isinstance(payload, dict) else None
    return {
        "items": len(items),
        "item_types": dict(Counter(str(i.get("type", "message")) for i in items if isinstance(i, dict))),
        "tools": len(payload.get("tools") or []) if isinstance(payload, dict) else 0,
        # instructions become the system message: they count against the same limit
        "input_chars": text_chars(items) + (len(instructions) if isinstance(instructions, str) else 0),
    }


class LoggingProxy(ThreadingHTTPServer):
    """Relays every request to the Worker and streams the answer back as it arrives (SSE)."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), RelayHandler)
        self.upstream = urlsplit(upstream)
        self.records: list[dict[str, Any]] = []
        self.turn = 0
        self.started = time.monotonic()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def clock(self) -> float:
        return round(time.monotonic() - self.started, 3)


class RelayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LoggingProxy

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self._relay()

    do_POST = do_GET  # noqa: N815

    def _relay(self) -> None:
        proxy = self.server
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        record = {"turn": proxy.turn, "method": self.command, "path": self.path, "body_bytes": len(body),
                  "encoding": self.headers.get("content-encoding"), "sent_s": proxy.clock(), **shape(body)}
        with proxy.lock:
            proxy.records.append(record)
        upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=TURN_TIMEOUT_S)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        upstream.request(self.command, self.path, body, headers)
        response = upstream.getresponse()
        record["status"] = response.status
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        # No length and no chunking: the body ends when this connection closes, so each
        # piece can be written as soon as it arrives (wfile is unbuffered).
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        kept = b""  # an error's body, for its message (an answer's text is never kept)
        try:
            while chunk := response.read1(65536):
                self.wfile.write(chunk)
                if response.status >= 400 and len(kept) < 65536:
                    kept += chunk
        except OSError:
            record["client_left"] = True
        finally:
            upstream.close()
            record["ended_s"] = proxy.clock()
        if kept:
            try:
                record["error"] = json.loads(kept).get("error", {}).get("message")
            except (ValueError, AttributeError):
                record["error"] = kept[:300].decode(errors="replace")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
        pass


def run_turn(args: list[str], cwd: str, env: dict[str, str]) -> dict[str, Any]:
    """One `codex exec` in its own process group, killed by that group's id at the timeout."""
    began = time.monotonic()
    process = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=TURN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    done = [e["item"] for e in events if e.get("type") == "item.completed"]
    failed = [e.get("error", {}).get("message") for e in events if e.get("type") == "turn.failed"]
    return {"rc": process.returncode, "seconds": round(time.monotonic() - began, 2),
            "commands_run": sum(1 for item in done if item.get("type") == "command_execution"),
            "failure": failed[-1] if failed else (None if process.returncode == 0 else stderr[-300:])}


def session(base_url: str, turns: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float]:
    """Ten turns of one Codex session through the proxy: (requests, turns, wall seconds)."""
    codex = str(ensure_codex())
    proxy = LoggingProxy(base_url)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    results = []
    try:
        # Not --ephemeral: `resume --last` finds the session in CODEX_HOME/sessions, so the
        # home and the working directory stay the same across turns.
        with tempfile.TemporaryDirectory(prefix="codex-home-") as home, tempfile.TemporaryDirectory(prefix="codex-work-") as work:
            Path(home, "config.toml").write_text(config_toml(proxy.url))
            env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "TERM": "dumb", "CODEX_HOME": home, "HOME": home,
                   API_KEY_ENV: "any key works without AUTH_TOKEN"}
            flags = ["--strict-config", "--skip-git-repo-check", "--ignore-rules", "--sandbox", "read-only",
                     "--color", "never", "--model", MODEL, "--json"]
            for turn in range(1, turns + 1):
                proxy.turn = turn
                prompt = PROMPTS[(turn - 1) % len(PROMPTS)]
                resume = ["resume", "--last"] if turn > 1 else []
                result = run_turn([codex, "exec", *flags, *resume, "--", prompt], work, env)
                results.append({"turn": turn, "kind": "command" if "command" in prompt else "plain", **result})
    finally:
        proxy.shutdown()
        proxy.server_close()
    return proxy.records, results, proxy.clock()


def summarise(requests: list[dict[str, Any]], turns: list[dict[str, Any]], wall: float) -> dict[str, Any]:
    config = wrangler_config()
    limiter = tomllib.loads((ROOT / "wrangler.toml").read_text())["ratelimits"][0]["simple"]
    posts = [r for r in requests if r["method"] == "POST"]
    for turn in turns:
        own = [r for r in requests if r["turn"] == turn["turn"]]
        turn["requests"] = len(own)
        turn["last_body_bytes"] = own[-1]["body_bytes"] if own else 0
    for before, after in zip(turns, turns[1:], strict=False):
        after["growth_bytes"] = after["last_body_bytes"] - before["last_body_bytes"]
    sent = sorted(r["sent_s"] for r in requests)
    largest = max(posts, key=lambda r: r["body_bytes"], default={})
    return {
        "total_requests": len(requests),
        "requests_per_turn": [t["requests"] for t in turns],
        "largest_body_bytes": largest.get("body_bytes"),
        "largest_input_items": max((r.get("items", 0) for r in posts), default=0),
        "largest_input_chars": max((r.get("input_chars", 0) for r in posts), default=0),
        "last_body_bytes": posts[-1]["body_bytes"] if posts else None,
        "mean_growth_bytes_per_turn": round((turns[-1]["last_body_bytes"] - turns[0]["last_body_bytes"]) / max(1, len(turns) - 1)),
        "wall_s": wall,
        "peak_requests_in_60s": max((sum(1 for s in sent if start <= s < start + 60) for start in sent), default=0),
        "refused": [{"turn": r["turn"], "status": r["status"], "error": r.get("error")} for r in requests if r.get("status", 0) >= 400],
        "failed_turns": [{"turn": t["turn"], "rc": t["rc"], "failure": t["failure"]} for t in turns if t["rc"] != 0],
        "limits": {"body_limit_bytes": config.body_limit, "messages": config.messages_for(config.model),
                   "input_chars": config.input_chars_for(config.model), "max_tokens": config.max_tokens,
                   "rate_limit": f"{limiter['limit']} per {limiter['period']} s per client"},
    }


def markdown(requests: list[dict[str, Any]], turns: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    lines = ["| # | turn | request | status | body bytes | items | items by type | tools | input chars | sent s | ended s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, r in enumerate(requests, 1):
        types = ", ".join(f"{k} {v}" for k, v in sorted(r.get("item_types", {}).items()))
        lines.append(f"| {n} | {r['turn']} | {r['method']} {r['path']} | {r.get('status')} | {r['body_bytes']:,} | {r.get('items')} "
                     f"| {types} | {r.get('tools')} | {r.get('input_chars', 0):,} | {r['sent_s']} | {r.get('ended_s')} |")
    lines += ["", "| turn | kind | rc | seconds | requests | commands run | last body bytes | growth bytes |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {t['turn']} | {t['kind']} | {t['rc']} | {t['seconds']} | {t['requests']} | {t['commands_run']} "
              f"| {t['last_body_bytes']:,} | {t.get('growth_bytes', '')} |" for t in turns]
    lines += ["", *(f"- {key}: {value}" for key, value in summary.items())]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paces", default=f"0,{RuntimeOptions().ai_pace:g}",
                        help="the emulator's tokens per second for each run, comma-separated (0: flat out)")
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    pool = RuntimePool()
    runs = []
    try:
        for pace in (float(p) for p in args.paces.split(",")):
            runtime = pool.get(RuntimeOptions(ai_pace=pace))
            requests, turns, wall = session(runtime.url, args.turns)
            summary = summarise(requests, turns, wall)
            print(f"\n## Codex session, {args.turns} turns, emulator pace {pace:g} tokens/s\n\n{markdown(requests, turns, summary)}")
            runs.append({"pace": pace, "summary": summary, "turns": turns, "requests": requests})
    finally:
        pool.close()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"codex_model": MODEL, "runs": runs}, indent=1) + "\n")
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
