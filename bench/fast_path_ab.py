"""Do the Reframer's fast paths pay? CPU per 1,000-token answer with and without them, side
by side in one run, in the production-like runtime (workerd alone).

    python bench/fast_path_ab.py [--repeats 5] [--streams 20]

Three copies of src/ are served: as they are; with `feed_whole_event` switched off (one
network read holding one token's frame, read by one regex and copied through undecoded);
and with the block fast path switched off too (`native_event_bodies`: a block of common
native frames read by one regex call). Each on native frames (`{"response": ...}`, the
older models) and on OpenAI-style chunks (today's default model), one frame a network
chunk, as Workers AI sends them; `/api/chat` and `/v1/chat/completions`. Runs rotate, so no
variant is always measured after the same one. Prints a Markdown table; writes
bench/results/fast_path_ab.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness.client import drain_posts  # noqa: E402
from tests.harness.processes import workerd_cpu_seconds  # noqa: E402
from tests.harness.runtime import LocalRuntime, RuntimeOptions  # noqa: E402

MODEL = "@cf/zai-org/glm-4.7-flash"
TOKENS = 1000
# Each variant: the text replaced in src/sse/_reframer.py (nothing for the first).
VARIANTS: dict[str, list[tuple[str, str]]] = {
    "both fast paths": [],
    "no whole-event path": [("        if not self._whole_events or", "        if True or not self._whole_events or")],
    "no fast path": [("        if not self._whole_events or", "        if True or not self._whole_events or"),
                     ("bodies = native_event_bodies(block) if fast else None", "bodies = None")],
}
FRAMINGS = {"native frames": "native", "OpenAI chunks": None}
ROUTES = ("/api/chat", "/v1/chat/completions")


def copy_of_src(scratch: Path, name: str, edits: list[tuple[str, str]]) -> str:
    worker = scratch / name.replace(" ", "-") / "src"
    shutil.copytree(ROOT / "src", worker, ignore=shutil.ignore_patterns("__pycache__"))
    reframer = worker / "sse" / "_reframer.py"
    text = reframer.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    reframer.write_text(text)
    return str(worker / "entry.py")


def body(route: str, i: int) -> dict[str, object]:
    messages = [{"role": "user", "content": f"benchmark conversation {i}"}]
    return {"messages": messages} if route == "/api/chat" else {"model": MODEL, "messages": messages, "stream": True}


async def drain(runtime: LocalRuntime, route: str, count: int) -> None:
    await drain_posts(runtime.url + route, [body(route, i) for i in range(count)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    parser.add_argument("--framings", default=",".join(FRAMINGS), help="comma-separated, of: " + ", ".join(FRAMINGS))
    args = parser.parse_args()
    variants = {name: VARIANTS[name] for name in args.variants.split(",")}
    framings = {name: FRAMINGS[name] for name in args.framings.split(",")}
    samples: dict[tuple[str, str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        runtimes: dict[tuple[str, str], LocalRuntime] = {}
        try:
            for variant, edits in variants.items():
                main_module = copy_of_src(Path(scratch), variant, edits)
                for framing, ai_format in framings.items():
                    runtimes[variant, framing] = LocalRuntime(RuntimeOptions(
                        ai_pace=0, ai_format=ai_format, ai_reply_tokens=TOKENS, ai_frames_per_chunk=1, workerd_direct=True,
                        main=main_module)).start()
            cases = [(variant, framing, route) for variant, framing in runtimes for route in ROUTES]
            for variant, framing, route in cases:  # warm every isolate and the JITs
                asyncio.run(drain(runtimes[variant, framing], route, 10))
            for repeat in range(args.repeats):
                shift = repeat * len(cases) // args.repeats
                for variant, framing, route in cases[shift:] + cases[:shift]:
                    runtime = runtimes[variant, framing]
                    before = workerd_cpu_seconds(runtime)
                    asyncio.run(drain(runtime, route, args.streams))
                    samples.setdefault((variant, framing, route), []).append(1000 * (workerd_cpu_seconds(runtime) - before) / args.streams)
        finally:
            for runtime in runtimes.values():
                runtime.stop()
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "fast_path_ab.json").write_text(json.dumps({" | ".join(key): values for key, values in samples.items()}, indent=1))
    print(f"| upstream | route | {' | '.join(variants)} |\n|---|---|{'---|' * len(variants)}")
    for framing in framings:
        for route in ROUTES:
            cells = []
            for variant in variants:
                values = samples[variant, framing, route]
                cells.append(f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})")
            print(f"| {framing} | `{route}` | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
