"""Stops that always stop (issue 20): a DELETE of a resumable answer, and a grace period
that runs out with nobody reading, cancel the model's stream every time, under load.

Each trial starts an answer, attaches 8 readers to it, then stops it (DELETE) or has all
of them leave (the grace runs out: `abandoned`), and waits for the emulator's
`ai_upstream_cancelled` of THAT answer's model call. A call is told apart by its
max_tokens, unique per trial: the emulator logs it in `ai_run` with the call's id, which
its cancel record carries too. Meanwhile 8 other answers stream (plain and resumable,
each read by a client), and 3 trials overlap. 40 trials of each in CI (100 with
RELIABILITY_SCALE=full), in one production-like runtime (workerd alone).

The emulator holds its call's context until its stream ends (ai_emulator/emulator.js,
streamFrom). Without that hold, workerd abandons many of these streams on the emulator's
side before their cancel() runs (bench/rpc_stream_cancel/ shows it in workerd alone), and
this test fails: 41 and 63 of 100 were seen.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.harness.client import USER, ChatResult, parse_sse
from tests.harness.runtime import LocalRuntime, RuntimeOptions

# The race this catches lost 41 and 63 of 100 stops (above): 40 trials miss it with odds
# far below 1e-8. CI runs 40 of each; RELIABILITY_SCALE=full runs the 100 of the claim.
TRIALS = 100 if os.environ.get("RELIABILITY_SCALE") == "full" else 40
READERS = 8  # attached to the answer being stopped, besides the request that began it
OTHER_STREAMS = 8
OVERLAP = 3  # trials in flight at once
GRACE_MS = 400
# Paced so every answer is still being generated when it is stopped: at least 300 tokens
# at 20 a second is 15 s, and a trial stops its answer within about 2 s of its start.
PACE = 20
OTHER_MAX_TOKENS = 1024
DELETE_MAX_TOKENS = 300  # trial i asks for 300 + i: the call's mark in the emulator's log
GRACE_MAX_TOKENS = 600
# A cancel is sent when the stop settles; this is how long one may take to be logged.
CANCEL_WAIT_S = 15.0
READERS_END_S = 10.0  # readers of a stopped answer get its terminal event at once
MAX_FAILURES = 3

LOADED = RuntimeOptions(
    workerd_direct=True, ai_pace=PACE, ai_reply_tokens=2000,
    variables=(("RESUME_GRACE_MS", str(GRACE_MS)),),
)


def limits() -> httpx.Limits:
    # Every reader holds a connection of its own.
    return httpx.Limits(max_connections=(READERS + 2) * OVERLAP + OTHER_STREAMS + 8, max_keepalive_connections=0)


@dataclass
class Reading:
    """One client reading a response body, until its end or until told to leave."""

    first_bytes: asyncio.Event = field(default_factory=asyncio.Event)
    leave: asyncio.Event = field(default_factory=asyncio.Event)
    body: bytearray = field(default_factory=bytearray)
    status: int = 0

    async def read(self, http: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> None:
        async with http.stream(method, url, **kwargs) as response:
            self.status = response.status_code
            chunks = response.aiter_raw()
            while True:
                step = asyncio.ensure_future(anext(chunks, None))
                left = asyncio.ensure_future(self.leave.wait())
                await asyncio.wait({step, left}, return_when=asyncio.FIRST_COMPLETED)
                if left.done():
                    step.cancel()
                    return  # closing the response drops the connection: the client left
                left.cancel()
                chunk = step.result()
                if chunk is None:
                    return
                self.body += chunk
                self.first_bytes.set()

    def events(self) -> ChatResult:
        result = ChatResult(status=self.status, headers=httpx.Headers())
        parse_sse(self.body.decode(), result, 0.0)
        return result

    def meta(self) -> dict[str, Any] | None:
        events = self.events().events
        return events[0].data if events and events[0].name == "meta" else None


@dataclass
class Outcome:
    cancelled: bool
    detail: str  # what was seen when it was not
    seconds: float  # from the stop (or the last reader leaving) to the record, or to giving up
    problems: list[str] = field(default_factory=list)  # what the readers got wrong
    trial: int = -1

    @property
    def ok(self) -> bool:
        return self.cancelled and not self.problems


def call_with_max_tokens(runtime: LocalRuntime, since: int, max_tokens: int) -> str | None:
    for record in runtime.records(since):
        if record["event"] == "ai_run" and record.get("settings", {}).get("max_tokens") == max_tokens:
            return str(record["call"])
    return None


async def cancel_of(runtime: LocalRuntime, since: int, max_tokens: int, timeout: float = CANCEL_WAIT_S) -> Outcome:
    """Whether the model call asked for with `max_tokens` was cancelled within `timeout`."""
    began = time.monotonic()
    call = None
    while (waited := time.monotonic() - began) < timeout:
        call = call or call_with_max_tokens(runtime, since, max_tokens)
        if call is not None:
            for record in runtime.records(since):
                if record.get("call") == call and record["event"] in ("ai_upstream_cancelled", "ai_upstream_finished"):
                    return Outcome(record["event"] == "ai_upstream_cancelled", record["event"], waited)
        await asyncio.sleep(0.1)
    return Outcome(False, "no ai_run" if call is None else "no cancel within the wait", timeout)


async def started_answer(http: httpx.AsyncClient, runtime: LocalRuntime, max_tokens: int,
                         tasks: list[asyncio.Task[None]]) -> tuple[Reading, dict[str, Any]]:
    """A resumable answer begun by a POST that goes on reading it; its meta event."""
    first = Reading()
    payload = {"messages": USER, "resumable": True, "max_tokens": max_tokens}
    tasks.append(asyncio.create_task(first.read(http, "POST", runtime.url + "/api/chat", json=payload)))
    while (meta := first.meta()) is None:
        await asyncio.wait_for(first.first_bytes.wait(), 30)
        first.first_bytes.clear()
        if tasks[-1].done():
            tasks[-1].result()
            raise AssertionError(f"the answer ended before its meta event: {first.status} {bytes(first.body[:200])!r}")
    return first, meta


async def attached_readers(http: httpx.AsyncClient, runtime: LocalRuntime, stream_id: str,
                           tasks: list[asyncio.Task[None]]) -> list[Reading]:
    """READERS readers of the answer, each with some of it read: attached."""
    readers = [Reading() for _ in range(READERS)]
    path = f"{runtime.url}/api/chat/streams/{stream_id}"
    tasks += [asyncio.create_task(reader.read(http, "GET", path)) for reader in readers]
    await asyncio.wait_for(asyncio.gather(*(reader.first_bytes.wait() for reader in readers)), 30)
    return readers


async def delete_trial(http: httpx.AsyncClient, runtime: LocalRuntime, since: int, index: int) -> Outcome:
    max_tokens = DELETE_MAX_TOKENS + index
    tasks: list[asyncio.Task[None]] = []
    try:
        first, meta = await started_answer(http, runtime, max_tokens, tasks)
        readers = await attached_readers(http, runtime, meta["stream_id"], tasks)
        stopped = await http.delete(f"{runtime.url}/api/chat/streams/{meta['stream_id']}")
        assert stopped.status_code == 204, stopped.text
        outcome = await cancel_of(runtime, since, max_tokens)
        _, reading = await asyncio.wait(tasks, timeout=READERS_END_S)
        if reading:
            outcome.problems.append(f"{len(reading)} readers still reading {READERS_END_S} s after the stop")
        for reader in [first, *readers]:
            events = reader.events().events
            terminal = events[-1] if events else None
            if terminal is None or terminal.name != "error" or terminal.data["code"] != "stopped":
                outcome.problems.append(f"a reader ended with {terminal}")
        return outcome
    finally:
        for task in tasks:
            task.cancel()


async def grace_trial(http: httpx.AsyncClient, runtime: LocalRuntime, since: int, index: int) -> Outcome:
    max_tokens = GRACE_MAX_TOKENS + index
    tasks: list[asyncio.Task[None]] = []
    try:
        first, meta = await started_answer(http, runtime, max_tokens, tasks)
        readers = await attached_readers(http, runtime, meta["stream_id"], tasks)
        for reader in [first, *readers]:
            reader.leave.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        outcome = await cancel_of(runtime, since, max_tokens)
        # It was the grace period that stopped it, not something else.
        if not any(r["event"] == "chat_resumable_abandoned" and r.get("request_id") == meta["request_id"]
                   for r in runtime.records(since)):
            outcome.problems.append("not logged as abandoned")
        return outcome
    finally:
        for task in tasks:
            task.cancel()


async def other_streams(http: httpx.AsyncClient, runtime: LocalRuntime, running: asyncio.Event) -> None:
    """OTHER_STREAMS answers streaming all the while, half plain and half resumable, each
    read whole by its client and followed by another, until `running` is cleared."""

    async def one(resumable: bool) -> None:
        payload = {"messages": USER, "max_tokens": OTHER_MAX_TOKENS, **({"resumable": True} if resumable else {})}
        while running.is_set():
            reading = Reading()
            task = asyncio.create_task(reading.read(http, "POST", runtime.url + "/api/chat", json=payload))
            while running.is_set() and not task.done():
                await asyncio.wait({task}, timeout=0.2)
            reading.leave.set()
            await task

    await asyncio.gather(*(one(resumable=i % 2 == 1) for i in range(OTHER_STREAMS)))


async def run_trials(runtime: LocalRuntime, trial: Callable[[httpx.AsyncClient, LocalRuntime, int, int], Awaitable[Outcome]],
                     trials: int = TRIALS, overlap: int = OVERLAP, max_failures: int = MAX_FAILURES) -> list[Outcome]:
    """`trials` trials, `overlap` at a time, while the other streams run; after
    `max_failures` failed trials no more start (a failing run ends in seconds, not minutes)."""
    since = len(runtime.lines)
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0), limits=limits()) as http:
        running = asyncio.Event()
        running.set()
        load = asyncio.create_task(other_streams(http, runtime, running))
        try:
            await asyncio.wait_for(load_started(runtime, since), 30)
            slots = asyncio.Semaphore(overlap)
            failed: list[Outcome] = []

            async def slotted(index: int) -> Outcome | None:
                async with slots:
                    if len(failed) >= max_failures:
                        return None
                    outcome = await trial(http, runtime, since, index)
                    outcome.trial = index
                    if not outcome.ok:
                        failed.append(outcome)
                    return outcome

            ran = await asyncio.gather(*(slotted(index) for index in range(trials)))
            return [outcome for outcome in ran if outcome is not None]
        finally:
            running.clear()
            await asyncio.wait_for(load, 30)


async def load_started(runtime: LocalRuntime, since: int) -> None:
    while sum(r["event"] == "ai_run" and r.get("settings", {}).get("max_tokens") == OTHER_MAX_TOKENS
              for r in runtime.records(since)) < OTHER_STREAMS:
        await asyncio.sleep(0.1)


def report(outcomes: list[Outcome], planned: int = TRIALS) -> str:
    failed = {outcome.trial: outcome.detail if not outcome.cancelled else outcome.problems
              for outcome in outcomes if not outcome.ok}
    cancelled = sum(outcome.cancelled for outcome in outcomes)
    slowest = max((outcome.seconds for outcome in outcomes if outcome.cancelled), default=0.0)
    return (f"{cancelled}/{len(outcomes)} cancelled (of {planned} planned), the slowest {slowest:.1f} s after its stop; "
            f"failed trials: {json.dumps(failed)}")


@pytest.mark.heavy
async def test_a_delete_cancels_the_model_every_time_under_load(start_runtime):
    runtime = start_runtime(LOADED)
    outcomes = await run_trials(runtime, delete_trial)
    assert len(outcomes) == TRIALS and all(outcome.ok for outcome in outcomes), report(outcomes)


@pytest.mark.heavy
async def test_an_expired_grace_period_cancels_the_model_every_time_under_load(start_runtime):
    runtime = start_runtime(LOADED)
    outcomes = await run_trials(runtime, grace_trial)
    assert len(outcomes) == TRIALS and all(outcome.ok for outcome in outcomes), report(outcomes)
