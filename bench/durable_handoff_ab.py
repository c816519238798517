"""What handing readers only durable events costs (issue 40: `storage.sync()` before each
batch goes out), side by side in one run: the same stored and resumable answers through
this tree and through another checkout (the commit before), each in its own production-like
runtime (workerd alone), in alternating rounds.

    python bench/durable_handoff_ab.py --before DIR [--repeats 5] [--streams 10]

DIR is a checkout of the commit to compare with, sharing this tree's .venv, node_modules
and .dev/pyodide-bundle (symlinks or copies). Each round sends `streams` 1,000-token answers
each way to each runtime and reads its workerd's CPU (user+system, /proc) around them, and
the time to the first event and to the end. Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

import tests.harness.runtime as harness  # noqa: E402
from tests.harness.processes import workerd_cpu_seconds  # noqa: E402

MODEL = "@cf/zai-org/glm-4.7-flash"
WAYS = {
    "/v1/responses, store: true": ("/v1/responses", {"model": MODEL, "stream": True, "store": True}),
    "/api/chat, resumable": ("/api/chat", {"resumable": True}),
}


def body(way: str, i: int) -> dict[str, Any]:
    path, extra = WAYS[way]
    question = f"benchmark conversation {i}"
    if path == "/v1/responses":
        return {"input": question, **extra}
    return {"messages": [{"role": "user", "content": question}], **extra}


async def timed(url: str, bodies: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """Each answer read to its end: (seconds to the first bytes, seconds to the end)."""
    first, whole = [], []
    async with httpx.AsyncClient(timeout=120) as client:
        for payload in bodies:
            start = time.perf_counter()
            seen = None
            async with client.stream("POST", url, json=payload) as response:
                assert response.status_code == 200, response.status_code
                async for _chunk in response.aiter_raw():
                    seen = seen or time.perf_counter()
            first.append((seen or time.perf_counter()) - start)
            whole.append(time.perf_counter() - start)
    return first, whole


def start(root: Path) -> harness.LocalRuntime:
    harness.ROOT = root  # the launcher and the Worker's source of that checkout
    try:
        return harness.LocalRuntime(harness.RuntimeOptions(ai_pace=0, ai_format=None, ai_reply_tokens=1000,
                                                           ai_frames_per_chunk=1, workerd_direct=True)).start()
    finally:
        harness.ROOT = ROOT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--streams", type=int, default=10)
    args = parser.parse_args()
    runtimes = {"before": start(args.before.resolve()), "after": start(ROOT)}
    cpu: dict[tuple[str, str], list[float]] = {}
    first: dict[tuple[str, str], list[float]] = {}
    try:
        for runtime in runtimes.values():  # warm both
            for way in WAYS:
                asyncio.run(timed(runtime.url + WAYS[way][0], [body(way, 10_000 + n) for n in range(3)]))
        for repeat in range(args.repeats):
            order = list(runtimes.items())
            for side, runtime in order if repeat % 2 == 0 else order[::-1]:
                for way in WAYS:
                    bodies = [body(way, repeat * args.streams + n) for n in range(args.streams)]
                    before = workerd_cpu_seconds(runtime)
                    firsts, _ = asyncio.run(timed(runtime.url + WAYS[way][0], bodies))
                    cpu.setdefault((side, way), []).append((workerd_cpu_seconds(runtime) - before) * 1000 / args.streams)
                    first.setdefault((side, way), []).extend(firsts)
    finally:
        for runtime in runtimes.values():
            runtime.stop()
    print(f"| per 1,000-token answer, median of {args.repeats} rounds of {args.streams} (min–max) | before | after |")
    print("|---|---|---|")
    for way in WAYS:
        cells = [f"{statistics.median(cpu[(side, way)]):.1f} ms CPU ({min(cpu[(side, way)]):.1f}–{max(cpu[(side, way)]):.1f})"
                 for side in runtimes]
        print(f"| {way} | {cells[0]} | {cells[1]} |")
        ttfb = [f"{statistics.median(first[(side, way)]) * 1000:.1f} ms" for side in runtimes]
        print(f"| {way}, first bytes (median) | {ttfb[0]} | {ttfb[1]} |")


if __name__ == "__main__":
    main()
