"""Production's 128 MB per isolate, emulated as closely as workerd allows: V8's heap
capped with --max-old-space-size=128 in the production-like runtime (workerd alone).
Pyodide's wasm memory is outside V8's heap and not capped by the flag; workerd's RSS is
reported for it instead (docs/benchmarks.md)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.runtime.client import chat
from tests.runtime.harness import RuntimeOptions
from tests.runtime.processes import workerd_rss_bytes

ANSWERS, TOKENS = 20, 5000


@pytest.mark.heavy
async def test_twenty_concurrent_5000_token_answers_complete_under_a_128_mb_heap(start_runtime):
    runtime = start_runtime(
        RuntimeOptions(ai_pace=0, ai_reply_tokens=TOKENS, ai_frames_per_chunk=1, workerd_direct=True,
                       v8_flags=("--max-old-space-size=128",), variables=(("MAX_TOKENS", str(TOKENS)),))
    )
    before = workerd_rss_bytes(runtime)
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=ANSWERS + 5)) as client:
        results = await asyncio.gather(
            *(chat(client, runtime.url, {"messages": [{"role": "user", "content": f"answer {i}"}]}) for i in range(ANSWERS))
        )
    for result in results:
        assert result.terminal.name == "done" and result.terminal.data["chunks"] == TOKENS
    print(f"workerd RSS {before >> 20} MiB before, {workerd_rss_bytes(runtime) >> 20} MiB after")
