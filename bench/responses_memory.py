"""What the largest requests and answers /v1/responses allows cost the isolate's memory, in
workerd alone, side by side with /v1/chat/completions.

    python bench/responses_memory.py

One production-like runtime (devtools/workerd_direct.py) whose main module logs Pyodide's
heap after each request (bench/image_memory.py's wrapper; nothing in src/ changes). In order:
a text turn; the largest request body allowed (Config.body_limit of CJK text and an emoji,
the worst case for how Python stores text) on each route; then a streamed answer of just
under MAX_HELD_ANSWER_CHARS of "é" on each route (the Responses encoder holds it, the chat
encoder does not), and one past it (which ends `failed`). The heap is WebAssembly memory,
which grows and never shrinks: each figure is the high-water mark so far. workerd's resident
memory also holds V8's heaps (the JS strings each event crosses the FFI as) and the
emulator's isolate.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from bench.image_memory import HEAP_ENTRY, MIB  # noqa: E402
from sse import MAX_HELD_ANSWER_CHARS  # noqa: E402
from tests.harness.processes import workerd_rss_bytes  # noqa: E402
from tests.harness.runtime import BODY_LIMIT, LocalRuntime  # noqa: E402
from tests.harness.scenarios import done_frame, repeat, script, scripted_options, send  # noqa: E402

GEMMA = "@cf/google/gemma-4-26b-a4b-it"  # the largest window served: the body limit is its
PIECE = 50_000  # characters of an upstream frame
UNDER = "long answer under the cap"
OVER = "long answer over the cap"


def frame(text: str) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}, ensure_ascii=False) + "\n\n"


def long_answer(chars: int) -> list[object]:
    ending = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    return [repeat(chars // PIECE, frame("\u00e9" * PIECE)), send(ending), done_frame()]


def largest_text(route: str) -> dict[str, object]:
    filler = "\u65e5" * ((BODY_LIMIT - 400) // 3) + "\U0001f600"  # 3 bytes a character in UTF-8, and one astral
    if route == "/v1/responses":
        return {"model": GEMMA, "input": filler, "stream": True}
    return {"model": GEMMA, "messages": [{"role": "user", "content": filler}], "stream": True}


def asking(route: str, question: str) -> dict[str, object]:
    if route == "/v1/responses":
        return {"model": "@cf/zai-org/glm-4.7-flash", "input": question, "stream": True}
    return {"model": "@cf/zai-org/glm-4.7-flash", "messages": [{"role": "user", "content": question}], "stream": True}


async def measure(runtime: LocalRuntime) -> None:
    async with httpx.AsyncClient(timeout=300) as http:
        async def send(route: str, body: dict[str, object]) -> str:
            raw = json.dumps(body, ensure_ascii=False).encode()
            async with http.stream("POST", runtime.url + route, content=raw, headers={"content-type": "application/json"}) as response:
                assert response.status_code == 200, (await response.aread())[:300]
                text = (await response.aread()).decode()
            if route == "/v1/responses":
                return "failed" if "event: response.failed" in text else "complete"
            return "complete" if text.rstrip().endswith("data: [DONE]") else "failed"

        async def report(name: str, outcome: str = "") -> None:
            await asyncio.sleep(0.5)  # the log line is read from the process's output
            heap = [record["bytes"] for record in runtime.records() if record["event"] == "bench_heap"][-1]
            print(f"| {name} | {outcome} | {heap / MIB:.1f} | {workerd_rss_bytes(runtime) / MIB:.0f} |", flush=True)

        print(f"body limit {BODY_LIMIT} bytes; held-answer cap {MAX_HELD_ANSWER_CHARS} characters\n")
        print("| step | outcome | Pyodide heap, MiB (high-water) | workerd RSS, MiB |\n|---|---|---|---|")
        await http.post(runtime.url + "/api/chat", json={"messages": [{"role": "user", "content": "hi"}]})
        await report("after a text turn")
        for route in ("/v1/chat/completions", "/v1/responses"):
            await report(f"the largest request body, `{route}`", await send(route, largest_text(route)))
        for question in (UNDER, OVER):
            for route in ("/v1/chat/completions", "/v1/responses"):
                await report(f"{question}, `{route}`", await send(route, asking(route, question)))


def main() -> None:
    options = scripted_options([done_frame()], prompts={
        UNDER: script(long_answer(MAX_HELD_ANSWER_CHARS - PIECE)),
        OVER: script(long_answer(MAX_HELD_ANSWER_CHARS + 3 * PIECE)),
    })
    with tempfile.TemporaryDirectory() as scratch:
        worker = Path(scratch) / "src"
        shutil.copytree(ROOT / "src", worker, ignore=shutil.ignore_patterns("__pycache__"))
        (worker / "heap_entry.py").write_text(HEAP_ENTRY)
        runtime = LocalRuntime(dataclasses.replace(options, workerd_direct=True, main=str(worker / "heap_entry.py"))).start()
        try:
            asyncio.run(measure(runtime))
        finally:
            runtime.stop()


if __name__ == "__main__":
    main()
