"""Micro-benchmark of the Reframer's feed path over a realistic Workers AI stream.

A 1,000-token native answer (`data: {"response":…,"p":…}` frames with Workers AI's own
padding, a usage frame, `[DONE]`), cut at random network boundaries into chunks of about
three frames each. Reports microseconds of Python time per token for the Reframer and, for
scale, for a straightforward splitlines + json.loads + json.dumps loop.

Runs unchanged on CPython (`python bench/reframer_bench.py`) and inside Pyodide
(`node bench/reframer_pyodide.mjs`, which loads src/sse and this file into Pyodide).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

try:
    import sse
except ImportError:  # run from a checkout without pytest's pythonpath
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    import sse

TOKENS = 1000
FRAMES_PER_CHUNK = 3

# Token pieces the way a Llama tokenizer streams English prose: mostly a leading-space word,
# some punctuation and sub-words, now and then a non-ASCII character or an escape.
_WORDS = (
    " the",
    " of",
    " and",
    " to",
    " a",
    " in",
    " is",
    " that",
    " for",
    " it",
    " as",
    " with",
    " was",
    " on",
    " be",
    " by",
    " stream",
    " Worker",
    " model",
    " token",
    " response",
    " Python",
    "ing",
    "ed",
    "s",
    ",",
    ".",
    "\n\n",
    " “quoted”",
    " café",
    " naïve",
    " 東京",
    " 🙂",
    ' "x"',
    " 42",
    ":",
    " **bold**",
    "\n-",
    " (see",
    ")",
)
_PADDING_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def make_stream(seed: int = 1, tokens: int = TOKENS, shape: str = "native") -> list[bytes]:
    """The upstream bytes of one answer, cut into network chunks at random points.

    `shape` "native" is Workers AI's own format (the Reframer's fast path); "openai" is
    `chat.completion.chunk` frames, which take the general path (json.loads per frame).
    """
    rng = random.Random(seed)
    frames = []
    for _ in range(tokens):
        text = rng.choice(_WORDS)
        if shape == "native":
            padding = _PADDING_ALPHABET[: rng.randint(1, 32)]
            frame = json.dumps({"response": text, "p": padding}, separators=(",", ":"))
        else:
            choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
            frame = json.dumps(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": "m",
                    "choices": [choice],
                }
            )
        frames.append(f"data: {frame}\n\n")
    usage = {"prompt_tokens": 40, "completion_tokens": tokens, "total_tokens": 40 + tokens}
    if shape == "native":
        frames.append(f"data: {json.dumps({'response': '', 'usage': usage})}\n\n")
    else:
        frames.append(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n")
    frames.append("data: [DONE]\n\n")
    body = "".join(frames).encode("utf-8")
    average = len(body) * FRAMES_PER_CHUNK // len(frames)
    # Split points anywhere, inside frames and inside multi-byte characters alike.
    cuts = sorted(rng.sample(range(1, len(body)), len(body) // average))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def reframe(chunks: Sequence[bytes]) -> int:
    """The Worker's whole per-request path through the core (bytes decoded by the core, as
    a caller holding bytes does; the Worker's relay hands it text); returns characters
    produced."""
    reframer = sse.Reframer(request_id="req-bench", model="@cf/meta/llama-3.1-8b-instruct")
    size = len(reframer.start())
    for chunk in chunks:
        size += len(reframer.feed(reframer.decode(chunk)))
    size += len(reframer.finish())
    return size


def naive_reframe(chunks: Sequence[bytes]) -> int:
    """The straightforward loop the target is measured against (LF-only, no spec cases)."""
    rng = random.Random()
    pending = b""
    size = 0
    for chunk in chunks:
        lines = (pending + chunk).splitlines(keepends=True)
        pending = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        for line in lines:
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                continue
            obj = json.loads(data)
            text = (
                obj.get("response")
                if "response" in obj
                else (obj["choices"][0]["delta"].get("content") if obj.get("choices") else None)
            )
            if text:
                padding = "x" * rng.randint(0, 32)
                out = json.dumps({"text": text, "p": padding}, ensure_ascii=False)
                size += len(f"event: delta\ndata: {out}\n\n".encode())
    return size


def measure(
    run: Callable[[Sequence[bytes]], int], chunks: Sequence[bytes], repeats: int
) -> list[float]:
    """Microseconds per token of each of `repeats` runs (after one warm-up run)."""
    run(chunks)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(chunks)
        samples.append((time.perf_counter() - start) * 1e6 / TOKENS)
    return samples


def main(argv: Sequence[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--shape", choices=["native", "openai"], default="native")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    chunks = make_stream(shape=args.shape)
    result: dict[str, object] = {
        "python": sys.version.split()[0],
        "implementation": f"{platform.python_implementation()} on {platform.machine()}",
        "shape": args.shape,
        "chunks": len(chunks),
        "bytes": sum(map(len, chunks)),
        "tokens": TOKENS,
    }
    for name, run in (("reframer", reframe), ("naive", naive_reframe)):
        samples = measure(run, chunks, args.repeats)
        result[name] = {
            "min_us_per_token": round(min(samples), 3),
            "median_us_per_token": round(statistics.median(samples), 3),
        }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return result


if __name__ == "__main__":
    main()
