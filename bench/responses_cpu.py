"""CPU and bytes per 1,000-token answer: /v1/responses streamed, side by side with
/v1/chat/completions streamed and /api/chat, in the production-like runtime (workerd alone).

    python bench/responses_cpu.py [--repeats 5] [--streams 20]

Each run sends `streams` 1,000-token answers down each route, in a rotating order, and reads
workerd's CPU time (user+system, /proc) around them; the pass-through `/api/chat/raw` is the
floor. The upstream is today's default model's framing (OpenAI-style chunks, one frame a
network chunk, as Workers AI sends them), from the unpaced emulator. Prints a Markdown
table for docs/benchmarks.md and writes bench/results/responses_cpu.json.
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


def body(route: str, i: int) -> dict[str, Any]:
    question = f"benchmark conversation {i}"  # a different answer each time, the same across routes
    if route == "/v1/responses":
        return {"model": MODEL, "input": question, "stream": True}
    if route == "/v1/chat/completions":
        return {"model": MODEL, "messages": [{"role": "user", "content": question}], "stream": True}
    return {"messages": [{"role": "user", "content": question}]}


ROUTES = ["/api/chat/raw", "/api/chat", "/v1/chat/completions", "/v1/responses"]


async def drain(runtime: LocalRuntime, route: str, count: int) -> int:
    return await drain_posts(runtime.url + route, [body(route, i) for i in range(count)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--streams", type=int, default=20)
    args = parser.parse_args()
    runtime = LocalRuntime(RuntimeOptions(ai_pace=0, ai_format=None, ai_reply_tokens=TOKENS, ai_frames_per_chunk=1,
                                          workerd_direct=True)).start()
    cpu: dict[str, list[float]] = {route: [] for route in ROUTES}
    sizes: dict[str, int] = {}
    try:
        for route in ROUTES:  # warm the isolate and the JITs
            asyncio.run(drain(runtime, route, 10))
        for repeat in range(args.repeats):
            for route in ROUTES[repeat % len(ROUTES):] + ROUTES[: repeat % len(ROUTES)]:
                before = workerd_cpu_seconds(runtime)
                sizes[route] = asyncio.run(drain(runtime, route, args.streams)) // args.streams
                cpu[route].append(1000 * (workerd_cpu_seconds(runtime) - before) / args.streams)
    finally:
        runtime.stop()
    floor = cpu["/api/chat/raw"]
    chat = cpu["/v1/chat/completions"]
    result = {
        "runtime": "workerd_direct", "answer_tokens": TOKENS, "streams_per_run": args.streams, "runs": args.repeats,
        "ms_cpu_per_answer": {route: statistics.median(values) for route, values in cpu.items()},
        "above_raw_ms": {route: statistics.median([v - f for v, f in zip(values, floor, strict=True)]) for route, values in cpu.items()},
        "responses_over_chat_completions": statistics.median([r / c for r, c in zip(cpu["/v1/responses"], chat, strict=True)]),
        "responses_over_chat_completions_above_raw": statistics.median(
            [(r - f) / (c - f) for r, c, f in zip(cpu["/v1/responses"], chat, floor, strict=True)]),
        "bytes_per_answer": sizes, "samples": cpu,
    }
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "responses_cpu.json").write_text(json.dumps(result, indent=1))
    print(f"| route | ms CPU per 1,000-token answer (median of {args.repeats} runs of {args.streams}; min–max) | above the pass-through | bytes per token |")
    print("|---|---|---|---|")
    for route, values in cpu.items():
        print(f"| `{route}` | {statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f}) | "
              f"{result['above_raw_ms'][route]:.1f} | {sizes[route] / TOKENS:.0f} |")
    print(f"\n/v1/responses over /v1/chat/completions: {result['responses_over_chat_completions']:.2f}x in all, "
          f"{result['responses_over_chat_completions_above_raw']:.2f}x above the pass-through")


if __name__ == "__main__":
    main()
