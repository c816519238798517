"""Side-by-side benchmarks in the real local runtime (workerd, Python 3.14 in Pyodide).

    python bench/runtime_bench.py [--repeats 3] [--quick] [--only cpu,latency,...]

Writes bench/results/latest.json and the charts docs/bench-cpu-direct.png,
docs/bench-cpu.png, docs/bench-latency.png, and prints the figures (the CPU ones also as
the Markdown tables that docs/benchmarks.md quotes). Every figure comes from this one run;
each measurement is repeated (median and spread reported). CPU is measured in the
production-like runtime (workerd alone, devtools/workerd_direct.py) and, for comparison,
under `wrangler dev`; the other sections run under `wrangler dev`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness.client import chat  # noqa: E402
from tests.harness.processes import workerd_cpu_seconds, workerd_rss_bytes  # noqa: E402
from tests.harness.runtime import LocalRuntime, RuntimeOptions  # noqa: E402

RESULTS = ROOT / "bench" / "results"
JS_REFRAMER = "bench/js_reframer/worker.js"
JS_IDENTITY = "bench/js_identity/worker.js"


def conversation(i: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"benchmark conversation {i}"}]}


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def drain(client: httpx.AsyncClient, url: str, path: str, payload: dict[str, Any]) -> int:
    size = 0
    async with client.stream("POST", url + path, json=payload) as response:
        assert response.status_code == 200, response.status_code
        async for chunk in response.aiter_raw():
            size += len(chunk)
    return size


# --- 1. CPU per 1,000-token answer ---------------------------------------------------------
# workerd process CPU (user+system from /proc) per 1,000-token answer from the unpaced
# emulator. Primary: the production-like runtime (devtools/workerd_direct.py: workerd alone,
# no proxy, no inspector), on two workloads. Second: `wrangler dev`, as measured before.
# Every path runs in one loop, repeated, so all figures share the machine's conditions.

# sample name -> (Worker module, or None for the Python Worker; route)
CPU_PATHS: dict[str, tuple[str | None, str]] = {
    "raw_passthrough": (None, "/api/chat/raw"),  # the Python Worker passing the stream through: the floor
    "python_reframe": (None, "/api/chat"),
    "js_passthrough": (JS_REFRAMER, "/api/chat/raw"),  # the JS anchor passing the stream through
    "js_identity": (JS_IDENTITY, "/api/chat"),  # one JS identity TransformStream: the second floor
    "js_reframe": (JS_REFRAMER, "/api/chat"),
    # A resumable answer: made by the Durable Object (same process here), every event
    # stored in SQLite and read back by the one reader. "?resumable" marks the request body.
    "python_resumable": (None, "/api/chat?resumable"),
}
# (group name, production-like runtime (else wrangler dev), frames per network chunk)
CPU_GROUPS: list[tuple[str, bool, int]] = [
    ("production_like_3_frames_per_chunk", True, 3),
    ("production_like_1_frame_per_chunk", True, 1),
    ("wrangler_dev_3_frames_per_chunk", False, 3),
]


def cpu_options(direct: bool, frames_per_chunk: int, main: str | None) -> RuntimeOptions:
    return RuntimeOptions(ai_pace=0, ai_reply_tokens=1000, ai_frames_per_chunk=frames_per_chunk, main=main, workerd_direct=direct)


def summarise_cpu(samples: dict[str, list[float]]) -> dict[str, Any]:
    def per_run(combine: Any, a: str, b: str) -> dict[str, float]:
        return spread([combine(x, y) for x, y in zip(samples[a], samples[b], strict=False)])

    return {
        "ms_cpu_per_answer": {name: spread(values) for name, values in samples.items()},
        "python_over_js": per_run(lambda p, j: p / j, "python_reframe", "js_reframe"),
        # ms per 1,000 tokens above the Python Worker's pass-through, per run
        "above_raw_ms_per_1000_tokens": {name: per_run(lambda x, r: x - r, name, "raw_passthrough")
                                         for name in samples if name != "raw_passthrough"},
        # the JS paths above the JS anchor's own pass-through (no Python request handling in it)
        "above_js_passthrough_ms_per_1000_tokens": {name: per_run(lambda x, r: x - r, name, "js_passthrough")
                                                    for name in ("js_identity", "js_reframe")},
    }


def bench_cpu(repeats: int, streams: int) -> dict[str, Any]:
    runtimes: dict[RuntimeOptions, LocalRuntime] = {}
    measured: list[tuple[str, str, RuntimeOptions, str]] = []  # (group, sample, runtime options, route)
    for group, direct, frames in CPU_GROUPS:
        for name, (main, route) in CPU_PATHS.items():
            measured.append((group, name, cpu_options(direct, frames, main), route))
    samples: dict[str, dict[str, list[float]]] = {group: {} for group, _, _ in CPU_GROUPS}
    try:
        for _, _, options, _ in measured:
            if options not in runtimes:
                runtimes[options] = LocalRuntime(options).start()

        async def run(runtime: LocalRuntime, route: str, count: int) -> None:
            path, _, flag = route.partition("?")
            async with httpx.AsyncClient(timeout=120) as client:
                for i in range(count):
                    await drain(client, runtime.url, path, {**conversation(i), **({flag: True} if flag else {})})

        for _, _, options, route in measured:  # warm every isolate and the JITs
            asyncio.run(run(runtimes[options], route, 10))
        for repeat in range(repeats):
            # A different order each run, so no path is always measured after the same one.
            shift = repeat * len(measured) // max(repeats, 1)
            for group, name, options, route in measured[shift:] + measured[:shift]:
                runtime = runtimes[options]
                before = workerd_cpu_seconds(runtime)
                asyncio.run(run(runtime, route, streams))
                samples[group].setdefault(name, []).append(1000 * (workerd_cpu_seconds(runtime) - before) / streams)
    finally:
        for runtime in runtimes.values():
            runtime.stop()
    result: dict[str, Any] = {"streams_per_run": streams, "answer_tokens": 1000}
    for group, direct, frames in CPU_GROUPS:
        ordered = {name: samples[group][name] for name in CPU_PATHS}
        result[group] = {"runtime": "workerd_direct" if direct else "wrangler_dev", "frames_per_chunk": frames,
                         **summarise_cpu(ordered), "samples": ordered}
    return result


CPU_LABELS = {
    "raw_passthrough": "`/api/chat/raw` (Python Worker, pass-through: the floor)",
    "python_reframe": "`/api/chat` (Python re-framer)",
    "js_passthrough": "JS anchor's `/api/chat/raw` (JS pass-through)",
    "js_identity": "JS identity `TransformStream` relay (second floor)",
    "js_reframe": "JS `TransformStream` re-framer (the anchor)",
    "python_resumable": "`/api/chat` resumable (Durable Object, events stored in SQLite)",
}


def cpu_tables(cpu: dict[str, Any]) -> str:
    """The CPU figures as the Markdown tables docs/benchmarks.md quotes."""
    def fmt(s: dict[str, float], digits: int = 1, suffix: str = "") -> str:
        return f"{s['median']:.{digits}f}{suffix} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"

    out = []
    for group, _, frames in CPU_GROUPS:
        data = cpu[group]
        out.append(f"#### {group} ({data['runtime']}, {frames} frame(s) per network chunk, "
                   f"{cpu['streams_per_run']} streams per run, {len(next(iter(data['samples'].values())))} runs)\n")
        out.append("| path | CPU ms per 1,000-token answer, median (min–max) | above the raw floor |")
        out.append("| --- | --- | --- |")
        for name in data["ms_cpu_per_answer"]:
            above = data["above_raw_ms_per_1000_tokens"].get(name)
            out.append(f"| {CPU_LABELS[name]} | {fmt(data['ms_cpu_per_answer'][name])} | {fmt(above) if above else '–'} |")
        out.append("")
        out.append(f"- Python over JS: {fmt(data['python_over_js'], 2, '×')}")
        for name, value in data["above_js_passthrough_ms_per_1000_tokens"].items():
            out.append(f"- {CPU_LABELS[name]} above the JS pass-through: {fmt(value)} ms")
        out.append("")
    return "\n".join(out)


# --- 2. Added latency with a paced upstream -------------------------------------------------
# The emulator writes each token as "<t=ms>", the wall-clock time it sent the token; the
# client subtracts it from the arrival time. The same clock on both ends (one machine),
# 1 ms resolution; /api/chat and /api/chat/raw are compared token by token.

STAMP = re.compile(r"<t=(\d+)>")


async def token_latencies(client: httpx.AsyncClient, url: str, path: str, payload: dict[str, Any]) -> tuple[list[float], float]:
    """One-way latency (ms) of each token (emulator send to client arrival), and the time
    from sending the request to the first token's arrival (ms)."""
    latencies: list[float] = []
    first_token_ms = float("nan")
    text = ""
    began = time.monotonic()
    async with client.stream("POST", url + path, json=payload) as response:
        async for chunk in response.aiter_raw():
            arrived = time.time() * 1000
            text += chunk.decode("utf-8", errors="replace")
            # Only whole frames count: a stamp is "arrived" when its frame is complete.
            complete, _, text = text.rpartition("\n\n")
            stamps = STAMP.findall(complete)
            if stamps and not latencies:
                first_token_ms = 1000 * (time.monotonic() - began)
            latencies += [arrived - int(stamp) for stamp in stamps]
    return latencies, first_token_ms


def bench_latency(repeats: int, conversations: int) -> dict[str, Any]:
    runtime = LocalRuntime(RuntimeOptions(ai_pace=40, ai_reply_tokens=120, ai_frames_per_chunk=1, ai_stamp_tokens=True)).start()
    chat_ms: list[float] = []
    raw_ms: list[float] = []
    per_run: list[dict[str, float]] = []
    ttft_chat: list[float] = []
    ttft_raw: list[float] = []
    try:
        async def run() -> None:
            async with httpx.AsyncClient(timeout=120) as client:
                await token_latencies(client, runtime.url, "/api/chat", conversation(0))  # warm-up
                for _ in range(repeats):
                    run_chat: list[float] = []
                    run_raw: list[float] = []
                    for i in range(conversations):
                        latencies, first = await token_latencies(client, runtime.url, "/api/chat", conversation(i))
                        run_chat += latencies
                        ttft_chat.append(first)
                        latencies, first = await token_latencies(client, runtime.url, "/api/chat/raw", conversation(i))
                        run_raw += latencies
                        ttft_raw.append(first)
                    per_run.append({"chat_p50": percentile(run_chat, 50), "chat_p99": percentile(run_chat, 99),
                                    "raw_p50": percentile(run_raw, 50), "raw_p99": percentile(run_raw, 99)})
                    chat_ms.extend(run_chat)
                    raw_ms.extend(run_raw)

        asyncio.run(run())
    finally:
        runtime.stop()
    added_p50 = [r["chat_p50"] - r["raw_p50"] for r in per_run]
    added_p99 = [r["chat_p99"] - r["raw_p99"] for r in per_run]
    return {
        "tokens": {"chat": len(chat_ms), "raw": len(raw_ms)},
        "one_way_ms": {"chat": {"p50": percentile(chat_ms, 50), "p99": percentile(chat_ms, 99)},
                       "raw": {"p50": percentile(raw_ms, 50), "p99": percentile(raw_ms, 99)}},
        "added_ms": {"p50": spread(added_p50), "p99": spread(added_p99)},
        "ttft_ms": {"chat_first_delta": spread(ttft_chat), "raw_first_frame": spread(ttft_raw)},
        "per_run": per_run,
        "samples_chat_ms": chat_ms,
        "samples_raw_ms": raw_ms,
    }


# --- 3. Memory ------------------------------------------------------------------------------


class RssSampler:
    def __init__(self, runtime: LocalRuntime, interval: float = 0.05) -> None:
        self.runtime, self.interval, self.samples = runtime, interval, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(workerd_rss_bytes(self.runtime))
            time.sleep(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def bench_memory(repeats: int, long_tokens: int, concurrent: int) -> dict[str, Any]:
    # MAX_TOKENS raised so the Worker asks the emulator for the whole long answer.
    long_options = RuntimeOptions(ai_pace=0, ai_reply_tokens=long_tokens, variables=(("MAX_TOKENS", str(long_tokens)),))
    runtime = LocalRuntime(long_options).start()
    long_growth, long_after, wide_growth, wide_after = [], [], [], []
    try:
        async def one(client: httpx.AsyncClient, i: int) -> None:
            await drain(client, runtime.url, "/api/chat", conversation(i))

        async def many(count: int) -> None:
            async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=count + 5)) as client:
                await asyncio.gather(*(one(client, i) for i in range(count)))

        asyncio.run(many(1))  # warm-up
        for _ in range(repeats):
            baseline = workerd_rss_bytes(runtime)
            with RssSampler(runtime) as sampler:
                asyncio.run(many(1))
            time.sleep(1)
            long_growth.append((max(sampler.samples) - baseline) / 2**20)
            long_after.append((workerd_rss_bytes(runtime) - baseline) / 2**20)
    finally:
        runtime.stop()
    runtime = LocalRuntime(RuntimeOptions(ai_pace=0, ai_reply_tokens=1000)).start()
    try:
        async def wide() -> None:
            async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=concurrent + 5)) as client:
                await asyncio.gather(*(drain(client, runtime.url, "/api/chat", conversation(i)) for i in range(concurrent)))

        asyncio.run(wide())  # warm-up
        for _ in range(repeats):
            baseline = workerd_rss_bytes(runtime)
            with RssSampler(runtime) as sampler:
                asyncio.run(wide())
            time.sleep(1)
            wide_growth.append((max(sampler.samples) - baseline) / 2**20)
            wide_after.append((workerd_rss_bytes(runtime) - baseline) / 2**20)
    finally:
        runtime.stop()
    return {
        "long_stream_tokens": long_tokens,
        "long_stream_peak_growth_mib": spread(long_growth),
        "long_stream_after_mib": spread(long_after),
        "concurrent_streams": concurrent,
        "concurrent_peak_growth_mib": spread(wide_growth),
        "concurrent_after_mib": spread(wide_after),
    }


# --- 4. Throughput ----------------------------------------------------------------------------


def bench_throughput(repeats: int, paced_streams: int) -> dict[str, Any]:
    runtime = LocalRuntime(RuntimeOptions(ai_pace=0, ai_reply_tokens=1000)).start()
    rates: dict[str, list[float]] = {"/api/chat": [], "/api/chat/raw": []}
    try:
        async def rate(path: str) -> float:
            async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=20)) as client:
                began = time.monotonic()
                await asyncio.gather(*(drain(client, runtime.url, path, conversation(i)) for i in range(10)))
                return 10 * 1000 / (time.monotonic() - began)

        asyncio.run(rate("/api/chat"))
        for _ in range(repeats):
            for path in rates:
                rates[path].append(asyncio.run(rate(path)))
    finally:
        runtime.stop()

    runtime = LocalRuntime(RuntimeOptions(ai_pace=40, ai_reply_tokens=100)).start()
    gaps: list[float] = []
    complete_runs: list[int] = []
    try:
        async def paced() -> int:
            async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=paced_streams + 10)) as client:
                async def expected_text(i: int) -> str:  # what conversation i must receive, from the raw route
                    body = b""
                    async with client.stream("POST", runtime.url + "/api/chat/raw", json=conversation(i)) as r:
                        async for chunk in r.aiter_raw():
                            body += chunk
                    frames = [json.loads(line[6:]) for line in body.decode().split("\n") if line.startswith("data: {")]
                    return "".join(f["response"] for f in frames)

                expected = await asyncio.gather(*(expected_text(i) for i in range(paced_streams)))
                results = await asyncio.gather(*(chat(client, runtime.url, conversation(i)) for i in range(paced_streams)))
                ok = 0
                for i, result in enumerate(results):
                    deltas = [e.at for e in result.events if e.name == "delta"]
                    gaps.extend(1000 * (b - a) for a, b in zip(deltas, deltas[1:], strict=False))
                    ok += result.terminal.name == "done" and result.text == expected[i]
                return ok

        for _ in range(repeats):
            complete_runs.append(asyncio.run(paced()))
    finally:
        runtime.stop()
    return {
        "tokens_per_second": {path: spread(values) for path, values in rates.items()},
        "paced_streams": paced_streams,
        "paced_complete_and_own_content": complete_runs,
        "paced_inter_token_ms": {"p50": percentile(gaps, 50), "p99": percentile(gaps, 99), "expected": 25.0},
    }


# --- 5. Import time inside Pyodide -------------------------------------------------------------


def bench_import(repeats: int) -> dict[str, Any]:
    node = ROOT / ".venv" / "bin" / "node"
    output = subprocess.run([str(node), str(ROOT / "bench" / "import_time.mjs"), str(repeats)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


# --- charts and report -------------------------------------------------------------------------


def draw(results: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if "cpu" in results:
        cpu = results["cpu"]["wrangler_dev_3_frames_per_chunk"]["ms_cpu_per_answer"]
        names = ["raw_passthrough", "js_reframe", "python_reframe"]
        labels = ["pass-through\n(/api/chat/raw)", "JS TransformStream\nre-framer", "Python re-framer\n(/api/chat)"]
        medians = [cpu[n]["median"] for n in names]
        errors = [[cpu[n]["median"] - cpu[n]["min"] for n in names], [cpu[n]["max"] - cpu[n]["median"] for n in names]]
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.bar(labels, medians, yerr=errors, capsize=6, color=["#9aa5b1", "#f0b429", "#2f80ed"])
        ax.set_ylabel("workerd CPU ms per 1,000-token answer")
        ax.set_title("Worker CPU per answer under wrangler dev (median, min-max over runs)")
        for x, value in enumerate(medians):
            ax.text(x, value, f"{value:.0f}", ha="center", va="bottom")
        fig.tight_layout()
        fig.savefig(ROOT / "docs" / "bench-cpu.png", dpi=110)
        plt.close(fig)

        groups = [("production_like_3_frames_per_chunk", "3 frames per chunk"), ("production_like_1_frame_per_chunk", "1 frame per chunk")]
        names = list(CPU_PATHS)
        colours = ["#9aa5b1", "#2f80ed", "#c5ccd3", "#f7d070", "#f0b429", "#7b61ff"]
        short = ["Python pass-through\n(/api/chat/raw)", "Python re-framer\n(/api/chat)", "JS pass-through", "JS identity\nTransformStream", "JS re-framer",
                 "Python resumable\n(Durable Object)"]
        fig, ax = plt.subplots(figsize=(9, 4.5))
        width = 0.8 / len(names)
        for i, (name, colour, label) in enumerate(zip(names, colours, short, strict=False)):
            stats = [results["cpu"][g]["ms_cpu_per_answer"][name] for g, _ in groups]
            xs = [g + (i - (len(names) - 1) / 2) * width for g in range(len(groups))]
            ax.bar(xs, [st["median"] for st in stats], width,
                   yerr=[[st["median"] - st["min"] for st in stats], [st["max"] - st["median"] for st in stats]],
                   capsize=3, color=colour, label=label.replace("\n", " "))
            for x, st in zip(xs, stats, strict=False):
                ax.text(x, st["max"], f"{st['median']:.0f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(groups)), [label for _, label in groups])
        ax.set_ylabel("workerd CPU ms per 1,000-token answer")
        ax.set_title("Worker CPU per answer, production-like runtime (workerd alone)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(ROOT / "docs" / "bench-cpu-direct.png", dpi=110)
        plt.close(fig)
    if "latency" in results:
        latency = results["latency"]
        fig, ax = plt.subplots(figsize=(7, 4))
        top = max(percentile(latency["samples_chat_ms"], 99.5), percentile(latency["samples_raw_ms"], 99.5)) + 1
        bins = [x / 2 for x in range(0, int(top * 2) + 2)]
        ax.hist(latency["samples_raw_ms"], bins=bins, alpha=0.6, color="#9aa5b1", label="/api/chat/raw (pass-through)")
        ax.hist(latency["samples_chat_ms"], bins=bins, alpha=0.6, color="#2f80ed", label="/api/chat (Python re-framing)")
        ax.set_xlabel("emulator send to client arrival, per token (ms, 1 ms clock)")
        ax.set_ylabel("tokens")
        ax.set_title("Per-token latency, paced upstream (40 tokens/s)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(ROOT / "docs" / "bench-latency.png", dpi=110)
        plt.close(fig)


def environment() -> dict[str, Any]:
    def version(command: list[str]) -> str:
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[-1]
        except (OSError, IndexError, subprocess.SubprocessError):
            return "unknown"

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), "unknown")
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {cpu}, {len(Path('/proc/cpuinfo').read_text().split('processor')) - 1} cores",
        "python": platform.python_version(),
        "workerd": version([str(ROOT / "node_modules" / "@cloudflare" / "workerd-linux-64" / "bin" / "workerd"), "--version"]),
        "wrangler": json.loads((ROOT / "node_modules" / "wrangler" / "package.json").read_text())["version"],
        "pyodide": json.loads((ROOT / "node_modules" / "pyodide" / "package.json").read_text())["version"],
        "load_average_at_start": list(__import__("os").getloadavg()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, to check the script")
    parser.add_argument("--only", default="cpu,latency,memory,throughput,import")
    args = parser.parse_args()
    only = set(args.only.split(","))
    quick = args.quick
    results: dict[str, Any] = {"environment": environment()}
    steps = {
        "cpu": lambda: bench_cpu(args.repeats, 10 if quick else 40),
        "latency": lambda: bench_latency(args.repeats, 2 if quick else 5),
        "memory": lambda: bench_memory(args.repeats, 10_000 if quick else 100_000, 20 if quick else 100),
        "throughput": lambda: bench_throughput(args.repeats, 20 if quick else 200),
        "import": lambda: bench_import(5 if quick else 20),
    }
    for name, step in steps.items():
        if name in only:
            print(f"running {name} ...", flush=True)
            results[name] = step()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=2))
    draw(results)
    def without_samples(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_samples(v) for k, v in value.items() if k not in ("samples", "samples_chat_ms", "samples_raw_ms")}
        return value

    print(json.dumps(without_samples(results), indent=2))
    if "cpu" in results:
        print(cpu_tables(results["cpu"]))


if __name__ == "__main__":
    main()
