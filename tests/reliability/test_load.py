"""Load through one local runtime (the OpenAPI check is in test_conformance.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random

import httpx
import pytest

from tests.harness.client import chat
from tests.harness.processes import workerd_rss_bytes
from tests.harness.scenarios import done_frame, echo, scripted_options, sleep, usage_frame

# CI runs the heavy suite reduced; RELIABILITY_SCALE=full runs the sizes of the claim.
FULL = os.environ.get("RELIABILITY_SCALE") == "full"
REQUESTS, CONCURRENCY = (1000, 100) if FULL else (300, 50)
ECHO_TWICE = [sleep(20), echo(), sleep(30), echo(), usage_frame(3, 2), done_frame()]


@pytest.mark.heavy
async def test_mixed_load_keeps_every_stream_its_own_and_memory_returns(start_runtime):
    # Its own runtime: the memory figures below compare its two rounds, which other tests'
    # earlier traffic on a shared runtime sways (seen: 84 then 82 MiB).
    runtime = start_runtime(dataclasses.replace(scripted_options(ECHO_TWICE), isolated=True))
    kinds = ["valid"] * 6 + ["invalid"] * 2 + ["cancelled"] * 2
    plan = [random.Random(7).choice(kinds) for _ in range(REQUESTS)]
    gate = asyncio.Semaphore(CONCURRENCY)
    problems: list[str] = []

    async def one(i: int, kind: str, client: httpx.AsyncClient) -> None:
        secret = f"request {i} token-{i * 104729}"
        async with gate:
            if kind == "invalid":
                response = await client.post(runtime.url + "/api/chat", json={"messages": [{"role": "assistant", "content": secret}]})
                if response.status_code != 400:
                    problems.append(f"{i}: invalid request got {response.status_code}")
                return
            leave = 1 if kind == "cancelled" else None
            result = await chat(client, runtime.url, {"messages": [{"role": "user", "content": secret}]}, leave_after_deltas=leave)
            if result.status != 200:
                problems.append(f"{i}: {kind} got {result.status}")
            elif kind == "valid" and (result.names[-1] != "done" or result.text != secret * 2):
                problems.append(f"{i}: wrong content or ending {result.names[-1:]}")
            elif kind == "cancelled" and result.text != secret:
                problems.append(f"{i}: cancelled stream saw another stream's text")

    growth = []
    for _ in range(2):
        rss_before = workerd_rss_bytes(runtime)
        async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=CONCURRENCY + 10)) as client:
            await asyncio.gather(*(one(i, kind, client) for i, kind in enumerate(plan)))
        assert problems == []
        await asyncio.sleep(2)
        growth.append(workerd_rss_bytes(runtime) - rss_before)
    assert (await httpx.AsyncClient().get(runtime.url + "/health")).status_code == 200
    assert runtime.hung_reports() == []
    print(f"workerd RSS growth over two rounds of {REQUESTS} requests: {[round(g / 2**20, 1) for g in growth]} MiB")
    # workerd's RSS grows with traffic whatever the Worker does (V8 collects late, and
    # under `wrangler dev` ~170 KiB per streamed pass-through request, docs/benchmarks.md,
    # "Memory"), so an absolute bound is either loose or flaky. What a leak of our own
    # changes is the second round: memory that returns (or levels off) grows about half
    # as much the second time (measured), a retained stream grows as much again.
    assert growth[1] < max(growth[0] * 3 / 4, 24 << 20)
