"""Helpers shared by the SSE core's tests."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sse import (
    DEFAULT_MAX_EVENT_CHARS,
    Event,
    EventStreamParser,
    EventTooLargeError,
    LineTooLongError,
    ReframerStats,
)


def splits(data: bytes, seed: int) -> list[bytes]:
    """`data` cut at random points (including inside multi-byte characters)."""
    rng = random.Random(seed)
    if len(data) < 2:
        return [data]
    cuts = sorted(rng.sample(range(1, len(data)), rng.randint(1, min(len(data) - 1, 12))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def three_ways(data: bytes, seed: int = 0) -> Iterator[tuple[str, list[bytes]]]:
    """The same input whole, one byte at a time, and at random split points."""
    yield "whole", [data]
    yield "bytewise", [data[i : i + 1] for i in range(len(data))]
    for n in range(3):
        yield f"random-{n}", splits(data, seed * 31 + n)


@dataclass(frozen=True, kw_only=True)
class Parsed:
    events: list[Event]
    overflow: bool
    last_event_id: str
    retry: int | None


def parse_chunks(
    chunks: Sequence[bytes],
    *,
    max_line_bytes: int = 1 << 20,
    max_event_chars: int = DEFAULT_MAX_EVENT_CHARS,
) -> Parsed:
    parser = EventStreamParser(max_line_bytes=max_line_bytes, max_event_chars=max_event_chars)
    events: list[Event] = []
    overflow = False
    for chunk in chunks:
        try:
            events.extend(parser.feed(chunk))
        except (LineTooLongError, EventTooLargeError) as error:
            events.extend(error.events)
            overflow = True
            break
    parser.close()
    return Parsed(
        events=events,
        overflow=overflow,
        last_event_id=parser.last_event_id,
        retry=parser.retry,
    )


def parse_three_ways(
    data: bytes,
    *,
    max_line_bytes: int = 1 << 20,
    max_event_chars: int = DEFAULT_MAX_EVENT_CHARS,
    seed: int = 0,
) -> Parsed:
    """Parses `data` three ways, checks they agree, and returns the common result."""
    results = {
        how: parse_chunks(chunks, max_line_bytes=max_line_bytes, max_event_chars=max_event_chars)
        for how, chunks in three_ways(data, seed)
    }
    whole = results["whole"]
    for how, result in results.items():
        assert result == whole, f"{how} parse differs from whole-input parse"
    return whole


def protocol_events(output: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Reads this project's SSE protocol back: (event type, decoded data) pairs.

    Pings are comments, so they do not appear.
    """
    parsed = parse_chunks([output])
    return [(event.type, json.loads(event.data)) for event in parsed.events]


def ndjson_objects(output: bytes) -> list[dict[str, Any]]:
    text = output.decode("utf-8")
    assert text == "" or text.endswith("\n")
    return [json.loads(line) for line in text.split("\n")[:-1]]


def without_padding(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return [(kind, {k: v for k, v in data.items() if k != "p"}) for kind, data in events]


def run_reframer(make: Callable[[], Any], chunks: Sequence[bytes], *, finish: bool = True) -> bytes:
    reframer = make()
    out = reframer.start()
    for chunk in chunks:
        out += reframer.feed(chunk)
    if finish:
        out += reframer.finish()
    return bytes(out)


def stats(
    *,
    deltas: int = 0,
    chars: int = 0,
    skipped: int = 0,
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
    tool_calls: int = 0,
) -> ReframerStats:
    """A ReframerStats for encoder tests, zero where not given."""
    return ReframerStats(
        deltas=deltas,
        chars=chars,
        reasoning_deltas=0,
        reasoning_chars=0,
        skipped=skipped,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        usage=usage,
    )
