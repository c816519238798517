"""What the Reframer holds of an unfinished upstream event: bounded by its caps, not by how
much was fed, and proportional to the text held however finely it was split."""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Iterable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import sse
from sse import Reframer
from tests.sse.support import feed, measured_alone, protocol_events, sent

CAP = 4096
BIG_CAP = 1 << 16


def hostile_chunks(seed: int, total: int) -> list[bytes]:
    rng = random.Random(seed)
    pieces = [
        b"data: {\"response\":\"ok\"}\n\n", b"data: ", b"\r", b"\n", b"\xff\xfe", b"\xe6\x97",
        b"x" * 700, b":comment\n", b"event: delta\n", b"data: [DONE]", b"{\"response\": 1}", b"\n\n",
    ]
    chunks, size = [], 0
    while size < total:
        chunk = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        chunks.append(chunk)
        size += len(chunk)
    return chunks


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_hostile_streams_never_raise_and_end_with_one_terminal_frame(seed):
    reframer = Reframer(request_id="r", model="m", max_line_bytes=CAP, rng=random.Random(seed))
    out = [reframer.start()]
    for chunk in hostile_chunks(seed, 50_000):
        out.append(feed(reframer, chunk))  # bytes, decoded first: invalid and split characters
    out.append(reframer.finish())
    text = sent("".join(out)).decode("utf-8")
    assert text.count("event: done\n") + text.count("event: error\n") == 1


def fed(reframer: Reframer, chunks: Iterable[str]) -> tuple[str, int]:
    """The output that ended the stream ("" if none did), and the most memory in use while
    `chunks` were fed, above what was in use before (other output is not kept)."""
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        ending = ""
        for chunk in chunks:
            out = reframer.feed(chunk)
            if reframer.terminated and not ending:
                ending = out
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    return ending, peak


def endless_line() -> tuple[str, int]:
    # The event cap far above: only the line cap may bound this.
    reframer = Reframer(request_id="r", model="m", max_line_bytes=BIG_CAP, max_event_chars=1 << 24, rng=random.Random(1))
    reframer.start()
    return fed(reframer, ["data: "] + ["y" * 1000] * 4000)  # 4 MB and no line end


def test_a_line_that_never_ends_is_dropped_at_the_line_cap_not_held_to_the_end():
    ending, peak = measured_alone("tests.sse.test_sse_memory_bound", "endless_line")
    assert peak < 4 * BIG_CAP, f"{peak} bytes held for a line capped at {BIG_CAP}"
    assert protocol_events(ending)[-1][1]["code"] == "upstream_malformed"


def endless_event() -> tuple[str, int]:
    reframer = Reframer(request_id="r", model="m", max_event_chars=BIG_CAP, rng=random.Random(1))
    reframer.start()
    return fed(reframer, ["data: " + "y" * 994 + "\n"] * 4000)  # 4 MB of lines and no blank line


def test_an_event_that_never_ends_is_dropped_at_the_event_cap_not_held_to_the_end():
    ending, peak = measured_alone("tests.sse.test_sse_memory_bound", "endless_event")
    assert peak < 4 * BIG_CAP, f"{peak} bytes held for an event capped at {BIG_CAP} characters"
    assert protocol_events(ending)[-1][1]["code"] == "upstream_malformed"


_SSE_FILES = tracemalloc.Filter(True, str(Path(sse.__file__).parent / "*"))


def held_by_sse() -> int:
    """Bytes allocated by the sse package's code and still held: what the process traces
    beside it (a runtime's log readers on other threads, in a worker that ran runtime tests
    before) is not the Reframer's, and made a loaded run fail on 21 KB that were not."""
    return sum(stat.size for stat in tracemalloc.take_snapshot().filter_traces([_SSE_FILES]).statistics("filename"))


def test_an_event_trickling_in_a_character_a_chunk_is_held_in_memory_near_its_length():
    # One fragment a chunk would cost some fifty bytes of object header per character held.
    reframer = Reframer(request_id="r", model="m", max_line_bytes=4 * BIG_CAP, rng=random.Random(1))
    reframer.start()
    text = "x" * BIG_CAP
    head = f'data: {{"response":"{text}'
    tracemalloc.start()
    try:
        baseline = held_by_sse()
        for i in range(len(head)):
            assert reframer.feed(head[i : i + 1]) == ""
        held = held_by_sse() - baseline
        # The whole event is still there, and once it ends nothing of it stays behind.
        [(kind, data)] = protocol_events(reframer.feed('"}\n\n'))
        assert (kind, data["text"]) == ("delta", text)
        del data
        left = held_by_sse() - baseline
    finally:
        tracemalloc.stop()
    assert len(head) <= held < 3 * len(head), f"{held} bytes held for {len(head)} bytes of an unfinished event"
    assert left < len(head) // 4, f"{left} bytes still held after the event was handed out"
