"""A quick side-by-side check of the stream path in the production-like runtime (workerd
alone), for trying a change to the relay before a full `make bench`:

    python bench/stream_path_quick.py cpu [--frames 1]   # CPU per 1,000-token answer
    python bench/stream_path_quick.py cpu --only python,js --base ../other/src/entry.py  # an A/B
    python bench/stream_path_quick.py cpu --only python,js --base old=../a/src/entry.py --base new=../b/src/entry.py  # several
    python bench/stream_path_quick.py cpu --only python,resumable --base ../other/src/entry.py --base-paths python,resumable
    python bench/stream_path_quick.py cpu --pace 50 --tokens 200 --streams 10  # a model's pace, not flat out
    python bench/stream_path_quick.py latency [--resumable] [--pace 40]  # added latency per token
    python bench/stream_path_quick.py alloc [--frames 1] # V8 heap bytes allocated per token

`cpu` prints the median over 3 runs of 30 streams of Python /api/chat, its /api/chat/raw
(the floor) and the JS re-framer anchor, measured in one run; for a resumable path also
what storing one answer cost (the object's `chat_resumable_stored` record: events, bytes
of database, statements, rows written). `latency` compares /api/chat (and with
`--resumable` a resumable answer's first reader) with /api/chat/raw on 4 paced
conversations of 120 stamped tokens. `alloc` sums
V8's own count of bytes allocated on each isolate's heap (`--trace-gc-nvp`: "allocated"
since the previous GC) over 30 answers, for the Worker's isolate only (the emulator's is
told apart as the one that allocates on the pass-through route too); Pyodide's wasm
memory is not V8 heap and is not in it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.runtime_bench import JS_REFRAMER, conversation, drain, percentile, token_latencies  # noqa: E402
from tests.harness.processes import workerd_cpu_seconds  # noqa: E402
from tests.harness.runtime import LocalRuntime, RuntimeOptions  # noqa: E402

STREAMS, REPEATS, WARM_UP = 30, 3, 8
CPU_PATHS = ("python", "raw", "js", "resumable")


def cpu(frames: int, *, repeats: int = REPEATS, only: tuple[str, ...] = CPU_PATHS, bases: dict[str, str] | None = None,
        base_paths: tuple[str, ...] = ("python",), framing: str | None = None, streams: int = STREAMS,
        pace: float = 0, tokens: int = 1000) -> None:
    """`bases`: other checkouts' src/entry.py by label, each measured beside this one's
    (an A/B of a change in one run) on `base_paths` of its own: "python" as the label
    (its /api/chat), "resumable" as label-resumable. `framing`: "native" or "openai" for every model;
    None: the default model's own (the catalog's). `pace`: the emulator's tokens per
    second (0: as fast as it can), for answers of `tokens` tokens; figures are per 1,000."""

    def options(main: str | None = None) -> RuntimeOptions:
        return RuntimeOptions(ai_pace=pace, ai_reply_tokens=tokens, ai_frames_per_chunk=frames, main=main, workerd_direct=True,
                              ai_format=framing)

    python, js = LocalRuntime(options()), LocalRuntime(options(JS_REFRAMER))
    runtimes = [python, js]
    paths = {"python": (python, "/api/chat"), "raw": (python, "/api/chat/raw"), "js": (js, "/api/chat"),
             "resumable": (python, "/api/chat?resumable")}  # the Durable Object's path
    paths = {name: path for name, path in paths.items() if name in only}
    for label, base in (bases or {}).items():
        runtimes.append(LocalRuntime(options(base)))
        base_routes = {"python": (label, "/api/chat"), "resumable": (f"{label}-resumable", "/api/chat?resumable")}
        for name in base_paths:
            path_label, route = base_routes[name]
            paths[path_label] = (runtimes[-1], route)

    async def run(runtime: LocalRuntime, route: str, count: int) -> None:
        path, _, flag = route.partition("?")
        async with httpx.AsyncClient(timeout=120) as client:
            for i in range(count):
                await drain(client, runtime.url, path, {**conversation(i), **({flag: True} if flag else {})})

    samples: dict[str, list[float]] = {name: [] for name in paths}
    try:
        for runtime in runtimes:  # inside the try: a runtime that started is stopped whatever fails next
            runtime.start()
        for runtime, path in paths.values():
            asyncio.run(run(runtime, path, WARM_UP))
        marks = [len(runtime.lines) for runtime in runtimes]
        for _ in range(repeats):
            for name, (runtime, path) in paths.items():
                before = workerd_cpu_seconds(runtime)
                asyncio.run(run(runtime, path, streams))
                samples[name].append(1000 * (workerd_cpu_seconds(runtime) - before) / streams * 1000 / tokens)
        stored = {name: stored_records(runtime, marks[runtimes.index(runtime)], repeats * streams)
                  for name, (runtime, path) in paths.items() if path.endswith("?resumable")}
    finally:
        for runtime in runtimes:
            runtime.stop()
    median = {name: statistics.median(values) for name, values in samples.items()}
    answers = f"{tokens}-token answers" + (f" at {pace:g} tokens/s" if pace else "")
    print(f"{frames} frame(s) per chunk, {framing or 'the default model'}'s framing, "
          f"CPU ms per 1,000 tokens (median of {repeats} runs of {streams} {answers}):")
    for name, values in samples.items():
        print(f"  {name:14} {median[name]:6.1f}   runs: {', '.join(f'{v:.1f}' for v in values)}")
    if "python" in median and "raw" in median:
        print(f"  python above raw {median['python'] - median['raw']:.1f}")
    for name in ("python", *(bases or {})):
        if name in median and "js" in median:
            print(f"  {name}/js {median[name] / median['js']:.2f}x")
    for name, records in stored.items():
        # What storing one answer cost (the object's own record of it): medians per answer.
        fields = ("events", "storage_bytes", "statements", "rows_written")
        found = {field: statistics.median(r[field] for r in records) for field in fields if all(field in r for r in records)}
        print(f"  {name} storage per answer ({len(records)} answers): " + ", ".join(f"{k} {v:,.0f}" for k, v in found.items()))
    # The resumable path against the direct one of the same checkout, run by run and as medians.
    for resumable, direct in (("resumable", "python"), *((f"{label}-resumable", label) for label in bases or {})):
        if resumable in samples and direct in samples:
            ratios = [r / d for r, d in zip(samples[resumable], samples[direct], strict=True)]
            print(f"  {resumable}/{direct} {median[resumable] / median[direct]:.2f}x   runs: "
                  f"{', '.join(f'{v:.2f}' for v in ratios)}")


def stored_records(runtime: LocalRuntime, since: int, count: int) -> list[dict[str, Any]]:
    """The `chat_resumable_stored` records of the answers measured (they arrive shortly
    after each answer's end)."""
    return runtime.wait_for_count("chat_resumable_stored", count, since=since, timeout=10)


def latency(*, pace: float = 40, resumable: bool = False) -> None:
    """`resumable`: also a resumable answer's first reader (the Durable Object's path)."""
    runtime = LocalRuntime(RuntimeOptions(ai_pace=pace, ai_reply_tokens=120, ai_frames_per_chunk=1, ai_stamp_tokens=True,
                                          workerd_direct=True)).start()
    routes = ["/api/chat", "/api/chat/raw", *(["/api/chat?resumable"] if resumable else [])]

    async def run() -> dict[str, list[float]]:
        found: dict[str, list[float]] = {route: [] for route in routes}
        async with httpx.AsyncClient(timeout=120) as client:
            await token_latencies(client, runtime.url, "/api/chat", conversation(0))  # warm-up
            for i in range(4):
                for route, values in found.items():
                    path, _, flag = route.partition("?")
                    payload = {**conversation(i), **({flag: True} if flag else {})}
                    values += (await token_latencies(client, runtime.url, path, payload))[0]
        return found

    try:
        found = asyncio.run(run())
    finally:
        runtime.stop()
    chat, raw = found["/api/chat"], found["/api/chat/raw"]
    print(f"tokens: {len(chat)} each at {pace:g} tokens/s; added by re-framing: "
          f"p50 {percentile(chat, 50) - percentile(raw, 50):.2f} ms, p99 {percentile(chat, 99) - percentile(raw, 99):.2f} ms")
    if resumable:
        kept = found["/api/chat?resumable"]
        print(f"resumable ({len(kept)} tokens), added to the raw route's: p50 {percentile(kept, 50) - percentile(raw, 50):.2f} ms, "
              f"p99 {percentile(kept, 99) - percentile(raw, 99):.2f} ms; to /api/chat's: "
              f"p50 {percentile(kept, 50) - percentile(chat, 50):.2f} ms, p99 {percentile(kept, 99) - percentile(chat, 99):.2f} ms")


GC_LINE = re.compile(r"^\[\d+:(0x[0-9a-f]+)[^\]]*\].*GC: (\{.*\})")


def allocated_by_isolate(lines: list[str]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for line in lines:
        if (match := GC_LINE.match(line)) is not None:
            try:
                totals[match.group(1)] = totals.get(match.group(1), 0) + int(json.loads(match.group(2)).get("allocated", 0))
            except ValueError:
                continue  # a line cut by other output
    return totals


def alloc(frames: int) -> None:
    def options(main: str | None = None) -> RuntimeOptions:
        return RuntimeOptions(ai_pace=0, ai_reply_tokens=1000, ai_frames_per_chunk=frames, main=main,
                              workerd_direct=True, v8_flags=("--trace-gc-nvp",))

    python, js = LocalRuntime(options()), LocalRuntime(options(JS_REFRAMER))
    routes = {"python": (python, "/api/chat"), "resumable": (python, "/api/chat?resumable"), "js": (js, "/api/chat")}

    async def run(runtime: LocalRuntime, route: str) -> None:
        path, _, flag = route.partition("?")
        async with httpx.AsyncClient(timeout=120) as client:
            for i in range(STREAMS):
                await drain(client, runtime.url, path, {**conversation(i), **({flag: True} if flag else {})})

    def measure(runtime: LocalRuntime, route: str) -> dict[str, int]:
        asyncio.run(run(runtime, route))  # warm-up, and a GC or two
        before = allocated_by_isolate(runtime.lines)
        asyncio.run(run(runtime, route))
        after = allocated_by_isolate(runtime.lines)
        return {isolate: total - before.get(isolate, 0) for isolate, total in after.items()}

    try:
        python.start()
        js.start()
        # The emulator's isolate allocates on the pass-through route; the Worker's does not.
        emulator = {id(runtime): max(measure(runtime, "/api/chat/raw").items(), key=lambda item: item[1])[0] for runtime in (python, js)}
        print(f"{frames} frame(s) per chunk, V8 heap bytes allocated per token by the Worker's isolate ({STREAMS} 1,000-token answers):")
        for name, (runtime, route) in routes.items():
            worker = {isolate: total for isolate, total in measure(runtime, route).items() if isolate != emulator[id(runtime)]}
            print(f"  {name:9} {sum(worker.values()) / (STREAMS * 1000):8.0f}")
    finally:
        python.stop()
        js.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("cpu", "latency", "alloc"))
    parser.add_argument("--frames", type=int, default=1, help="frames per network chunk (cpu, alloc)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="runs per path (cpu)")
    parser.add_argument("--only", default=",".join(CPU_PATHS), help="comma-separated paths to measure (cpu)")
    parser.add_argument("--framing", choices=("native", "openai"), default=None,
                        help="the emulator's framing for every model (cpu; default: the default model's own)")
    parser.add_argument("--base", action="append", default=[], metavar="[LABEL=]PATH",
                        help="another checkout's src/entry.py, measured beside this one as LABEL ('base' by default); "
                             "repeat for several (cpu)")
    parser.add_argument("--base-paths", default="python",
                        help="comma-separated paths of --base to measure: python ('base'), resumable ('base-resumable') (cpu)")
    parser.add_argument("--streams", type=int, default=STREAMS, help="answers per run and path (cpu)")
    parser.add_argument("--pace", type=float, default=None,
                        help="the emulator's tokens per second (cpu: default 0, unpaced; latency: default 40)")
    parser.add_argument("--resumable", action="store_true", help="also a resumable answer's first reader (latency)")
    parser.add_argument("--tokens", type=int, default=1000, help="tokens per answer (cpu)")
    args = parser.parse_args()
    if args.what == "cpu":
        base_paths = tuple(args.base_paths.split(","))
        if unknown := set(base_paths) - {"python", "resumable"}:
            parser.error(f"--base-paths: unknown {', '.join(sorted(unknown))}")
        bases = dict(base.partition("=")[::2] if "=" in base else ("base", base) for base in args.base)
        if len(bases) != len(args.base) or {"python", "raw", "js", "resumable"} & set(bases):
            parser.error("--base: each needs a label of its own, not a path's name")
        cpu(args.frames, repeats=args.repeats, only=tuple(args.only.split(",")), bases=bases, base_paths=base_paths,
            framing=args.framing, streams=args.streams, pace=args.pace or 0, tokens=args.tokens)
    elif args.what == "alloc":
        alloc(args.frames)
    else:
        latency(pace=40 if args.pace is None else args.pace, resumable=args.resumable)


if __name__ == "__main__":
    main()
