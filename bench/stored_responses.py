"""What storing a response costs, per 1,000-token answer: /v1/responses streamed with
`store: true` (made in its Durable Object, events written to SQLite, read back by the
stream), side by side with the same request not stored and with a resumable /api/chat
answer, in the production-like runtime (workerd alone).

    python bench/stored_responses.py [--repeats 5] [--streams 20]

Each run sends `streams` answers down each way, in a rotating order, and reads workerd's CPU
time (user+system, /proc) around them: the Worker and the objects run in that one process,
so a stored answer's figure is their sum (in production the object is billed apart). The
storage each stored answer took is its `chat_resumable_stored` record (events, bytes of
database, statements, rows written). Prints Markdown for docs/benchmarks.md and writes
bench/results/stored_responses.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness.client import drain_posts  # noqa: E402
from tests.harness.processes import workerd_cpu_seconds  # noqa: E402
from tests.harness.runtime import LocalRuntime, RuntimeOptions  # noqa: E402

MODEL = "@cf/zai-org/glm-4.7-flash"
TOKENS = 1000
WAYS = {
    "/v1/responses, not stored": ("/v1/responses", {"store": False}),
    "/v1/responses, store: true": ("/v1/responses", {"store": True}),
    "/api/chat, resumable": ("/api/chat", {"resumable": True}),
}


def body(way: str, i: int) -> dict[str, Any]:
    path, extra = WAYS[way]
    question = f"benchmark conversation {i}"  # a different answer each time, the same across ways
    if path == "/v1/responses":
        return {"model": MODEL, "input": question, "stream": True, **extra}
    return {"messages": [{"role": "user", "content": question}], **extra}


async def drain(runtime: LocalRuntime, way: str, count: int) -> None:
    await drain_posts(runtime.url + WAYS[way][0], [body(way, i) for i in range(count)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--streams", type=int, default=20)
    args = parser.parse_args()
    runtime = LocalRuntime(RuntimeOptions(ai_pace=0, ai_format=None, ai_reply_tokens=TOKENS, ai_frames_per_chunk=1,
                                          workerd_direct=True)).start()
    ways = list(WAYS)
    cpu: dict[str, list[float]] = {way: [] for way in ways}
    stored: list[dict[str, Any]] = []
    try:
        for way in ways:  # warm the isolate and the JITs
            asyncio.run(drain(runtime, way, 5))
        for repeat in range(args.repeats):
            for way in ways[repeat % len(ways):] + ways[: repeat % len(ways)]:
                mark = len(runtime.lines)
                before = workerd_cpu_seconds(runtime)
                asyncio.run(drain(runtime, way, args.streams))
                cpu[way].append(1000 * (workerd_cpu_seconds(runtime) - before) / args.streams)
                if way == "/v1/responses, store: true":
                    stored += [record for record in runtime.records(mark) if record["event"] == "chat_resumable_stored"]
    finally:
        runtime.stop()
    fields = ("events", "storage_bytes", "statements", "rows_written")
    storage = {field: statistics.median([record[field] for record in stored]) for field in fields} if stored else {}
    result = {"runtime": "workerd_direct", "answer_tokens": TOKENS, "streams_per_run": args.streams, "runs": args.repeats,
              "ms_cpu_per_answer": {way: statistics.median(values) for way, values in cpu.items()},
              "stored_answers_measured": len(stored), "storage_per_stored_answer": storage, "samples": cpu}
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "stored_responses.json").write_text(json.dumps(result, indent=1))
    print(f"| way | ms CPU per 1,000-token answer (median of {args.repeats} runs of {args.streams}; min–max) |")
    print("|---|---|")
    for way, values in cpu.items():
        print(f"| {way} | {statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f}) |")
    print(f"\nStorage per stored answer (median of {len(stored)}): " + ", ".join(f"{k} {v:,.0f}" for k, v in storage.items()))


if __name__ == "__main__":
    main()
