"""Helpers shared by the SSE core's tests."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sse import (
    DEFAULT_MAX_EVENT_CHARS,
    Event,
    EventStreamParser,
    EventTooLargeError,
    LineTooLongError,
    Reframer,
    ReframerStats,
)

# Upstream input: text, as the runtime hands it to the core, or bytes, which a caller
# holding them decodes first (`Reframer.decode`); cut bytes may split a character.
Input = TypeVar("Input", str, bytes)


def splits(data: Input, seed: int) -> list[Input]:
    """`data` cut at random points (for bytes, including inside multi-byte characters)."""
    rng = random.Random(seed)
    if len(data) < 2:
        return [data]
    cuts = sorted(rng.sample(range(1, len(data)), rng.randint(1, min(len(data) - 1, 12))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def three_ways(data: Input, seed: int = 0) -> Iterator[tuple[str, list[Input]]]:
    """The same input whole, one byte (or character) at a time, and at random split points."""
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


def text_and_bytes(upstream: str, seed: int = 0) -> Iterator[tuple[str, list[str] | list[bytes]]]:
    """`three_ways` of the text, then of its UTF-8 bytes (split characters included)."""
    yield from three_ways(upstream, seed)
    for how, chunks in three_ways(upstream.encode("utf-8", "surrogatepass"), seed):
        yield f"bytes-{how}", chunks


def sent(output: str) -> bytes:
    """`output` as the runtime sends it: UTF-8, which it must always encode to (strict:
    a lone surrogate raises)."""
    assert isinstance(output, str)
    return output.encode("utf-8")


def feed(reframer: Reframer, chunk: str | bytes) -> str:
    """Feeds text as it is, and bytes as a caller holding bytes does: decoded first."""
    return reframer.feed(chunk if isinstance(chunk, str) else reframer.decode(chunk))


def protocol_events(output: str | bytes) -> list[tuple[str, dict[str, Any]]]:
    """Reads this project's SSE protocol back: (event type, decoded data) pairs.

    Pings are comments, so they do not appear. Text must encode to UTF-8 as it is.
    """
    parsed = parse_chunks([sent(output) if isinstance(output, str) else output])
    return [(event.type, json.loads(event.data)) for event in parsed.events]


def ndjson_objects(output: str | bytes) -> list[dict[str, Any]]:
    text = output.decode("utf-8") if isinstance(output, bytes) else sent(output).decode("utf-8")
    assert text == "" or text.endswith("\n")
    return [json.loads(line) for line in text.split("\n")[:-1]]


def without_padding(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return [(kind, {k: v for k, v in data.items() if k != "p"}) for kind, data in events]


def run_reframer(make: Callable[[], Reframer], chunks: Sequence[str] | Sequence[bytes], *, finish: bool = True) -> str:
    """The whole output for `chunks` (text, or bytes decoded first); every piece is
    checked to encode to UTF-8."""
    reframer = make()
    pieces = [reframer.start()]
    pieces += [feed(reframer, chunk) for chunk in chunks]
    if finish:
        pieces.append(reframer.finish())
    for piece in pieces:
        sent(piece)
    return "".join(pieces)


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


class FeedOnlyReframer(Reframer):
    """A Reframer whose fast path takes nothing: every text goes to `feed`, the reference
    that `feed_whole_event` must match."""

    def feed_whole_event(self, text: str) -> str | None:
        return None


class CountingReframer(Reframer):
    """A Reframer that counts the texts its fast path took."""

    fast_events = 0

    def feed_whole_event(self, text: str) -> str | None:
        out = super().feed_whole_event(text)
        if out is not None:
            self.fast_events += 1
        return out


def native_event(body: str, padding: str | None = None) -> str:
    """A compact Workers AI native event; `body` is a JSON string body (escapes kept)."""
    pad = "" if padding is None else f',"p":"{padding}"'
    return f'data: {{"response":"{body}"{pad}}}\n\n'


def openai_event(
    body: str, field: str = "content", usage: str = "", *, id: str = "chatcmpl-1", model: str = "@cf/m", created: int = 1764000000
) -> str:
    """A compact OpenAI-style chunk as Workers AI streams it for most models; `body` is a
    JSON string body, `usage` what follows `choices` (e.g. `,"usage":null`)."""
    return (
        f'data: {{"id":"{id}","object":"chat.completion.chunk","created":{created},"model":"{model}",'
        f'"choices":[{{"index":0,"delta":{{"{field}":"{body}"}},"logprobs":null,"finish_reason":null}}]{usage}}}\n\n'
    )


def measured_alone(module: str, function: str) -> Any:
    """What `module.function()` returns (JSON), run in a fresh interpreter: tracemalloc
    counts every thread of a process, and a pytest-xdist worker that ran runtime tests before
    still has their log readers allocating beside the code measured (two CI runs failed on
    the few KiB they added)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    code = f"import json; from {module} import {function}; print(json.dumps({function}()))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=root, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])
