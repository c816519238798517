"""Fuzzing the Reframer with endless hostile input: no exception, and memory stays bounded
by the line cap rather than by how much was fed."""

from __future__ import annotations

import random
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from sse import Reframer

CAP = 4096


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
        out.append(reframer.feed(chunk))
    out.append(reframer.finish())
    text = b"".join(out).decode("utf-8")
    assert text.count("event: done\n") + text.count("event: error\n") == 1


def test_feeding_megabytes_keeps_memory_bounded_by_the_line_cap():
    reframer = Reframer(request_id="r", model="m", max_line_bytes=1 << 20, rng=random.Random(1))
    frame = b'data: {"response":" token","p":"abc"}\n\n'
    reframer.start()
    for _ in range(2000):  # warm up caches and interned strings
        reframer.feed(frame * 3)
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    for _ in range(30_000):  # ~3.6 MB more input
        reframer.feed(frame * 3)
    grown = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    assert grown < 64 * 1024, f"the reframer kept {grown} bytes of a stream it should not hold"
