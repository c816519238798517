"""How much one long answer grows the process, side by side, in the production-like
runtime (workerd alone):

    python bench/stream_memory_quick.py [--tokens 100000] [--repeats 2] [--base ../other/src/entry.py]

Each path gets a fresh workerd per repeat (Pyodide's wasm memory grows to its peak and
never shrinks, so a runtime that already streamed one long answer would hide the
growth): one 1,000-token answer to warm it up, then workerd's RSS is sampled every 50 ms
through one answer of `--tokens` tokens (one frame per chunk, unpaced, the default model's
framing unless `--framing` says otherwise). Printed per path: the peak growth over the reading just before the answer, and
what is still held 1 s after it ended, median and runs. Paths: Python /api/chat, its
/api/chat/raw (the pass-through floor), the JS re-framer anchor, and `base` (another
checkout's /api/chat) when given.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.runtime_bench import JS_REFRAMER, RssSampler, conversation, drain  # noqa: E402
from tests.harness.processes import workerd_rss_bytes  # noqa: E402
from tests.harness.runtime import LocalRuntime, RuntimeOptions  # noqa: E402


def growth(main: str | None, path: str, tokens: int, framing: str | None) -> tuple[float, float]:
    """(peak growth, growth still held 1 s after) in MiB, for one answer of `tokens`."""
    runtime = LocalRuntime(RuntimeOptions(ai_pace=0, ai_reply_tokens=tokens, ai_frames_per_chunk=1, main=main, ai_format=framing,
                                          workerd_direct=True, variables=(("MAX_TOKENS", str(tokens)),)))

    async def one(i: int) -> None:
        async with httpx.AsyncClient(timeout=900) as client:
            await drain(client, runtime.url, path, conversation(i))

    try:
        runtime.start()
        asyncio.run(one(0))  # warm-up (the answer is cut at the emulator's token count)
        time.sleep(1)
        baseline = workerd_rss_bytes(runtime)
        with RssSampler(runtime) as sampler:
            asyncio.run(one(1))
        time.sleep(1)
        return (max(sampler.samples) - baseline) / 2**20, (workerd_rss_bytes(runtime) - baseline) / 2**20
    finally:
        runtime.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--base", help="another checkout's src/entry.py, measured beside this one as 'base'")
    parser.add_argument("--only", default="python,raw,js,base", help="comma-separated paths")
    parser.add_argument("--framing", choices=("native", "openai"), default=None,
                        help="the emulator's framing for every model (default: the default model's own)")
    args = parser.parse_args()
    paths = {"python": (None, "/api/chat"), "raw": (None, "/api/chat/raw"), "js": (JS_REFRAMER, "/api/chat")}
    if args.base:
        paths["base"] = (args.base, "/api/chat")
    paths = {name: spec for name, spec in paths.items() if name in args.only.split(",")}
    peaks: dict[str, list[float]] = {name: [] for name in paths}
    held: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.repeats):
        for name, (main_module, path) in paths.items():  # interleaved, so drift hits every path
            peak, after = growth(main_module, path, args.tokens, args.framing)
            peaks[name].append(peak)
            held[name].append(after)
    print(f"workerd RSS growth (MiB) over one {args.tokens:,}-token answer ({args.framing or 'the default model'}'s framing), "
          f"fresh runtime each, {args.repeats} runs:")
    for name in paths:
        print(f"  {name:7} peak {statistics.median(peaks[name]):6.1f} (runs {', '.join(f'{v:.1f}' for v in peaks[name])})"
              f"   held 1 s after {statistics.median(held[name]):6.1f} (runs {', '.join(f'{v:.1f}' for v in held[name])})")
    if "python" in peaks and "js" in peaks:
        print(f"  python/js peak {statistics.median(peaks['python']) / max(statistics.median(peaks['js']), 0.1):.2f}x")


if __name__ == "__main__":
    main()
