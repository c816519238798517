"""A cancel of a ReadableStream received over RPC from a JS WorkerEntrypoint, in workerd
alone: does the producer's cancel() run?

    python bench/rpc_stream_cancel/run.py [--requests 100]

Each request to the consumer (consumer.js) takes a stream from the producer (producer.js)
over a service binding, reads one chunk and cancels the stream a random 0-100 ms later.
Three ways, 100 requests each, 8 at a time:
- during: the cancel happens while the consumer's request is still being answered;
- after: the consumer answers first and cancels from ctx.waitUntil (as a Durable Object
  cancels once the request that made the call has ended);
- after, keep: the same, with the producer holding its call's context (ctx.waitUntil)
  until its stream ends or is cancelled.
It prints, for each way, how many cancels reached the producer's cancel(); the other
streams were left without one: no more pulls, and most of them in a pull whose timer
never fired (the producer's context had ended).

Measured on pinned workerd 1.20261117.1 (2026-12-01, 2 busy cores), four runs: during
100/100 each time; after 37, 45, 31 and 51 of 100 (of the rest, most were left in a
pull); after with keep 100/100 each time. This is why the Workers AI
emulator keeps its context until its stream ends (ai_emulator/emulator.js, streamFrom).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from devtools.dev import free_port  # noqa: E402
from devtools.workerd_direct import WORKERD, capnp_string  # noqa: E402

HERE = Path(__file__).parent
WAYS = (("during", False), ("after", False), ("after", True))
OVERLAP = 8
SETTLE_S = 5.0  # after the last request: time for late cancels to be logged


def config(port: int) -> str:
    date = tomllib.loads((ROOT / "wrangler.toml").read_text())["compatibility_date"]

    def worker(module: str, bindings: str) -> str:
        source = capnp_string((HERE / module).read_text())
        return (f"(modules = [(name = {capnp_string(module)}, esModule = {source})], "
                f"compatibilityDate = {capnp_string(date)}, bindings = [{bindings}])")

    return (
        'using Workerd = import "/workerd/workerd.capnp";\n'
        "const config :Workerd.Config = (\n"
        f' services = [(name = "consumer", worker = {worker("consumer.js", "(name = " + capnp_string("PRODUCER") + ", service = " + capnp_string("producer") + ")")}),\n'
        f'             (name = "producer", worker = {worker("producer.js", "")})],\n'
        f' sockets = [(name = "http", address = "127.0.0.1:{port}", http = (), service = "consumer")],\n'
        ");\n"
    )


def events_by_id(lines: list[str]) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {}
    for line in lines:
        if line.startswith("{"):
            record = json.loads(line)
            seen.setdefault(record["id"], []).append(record["event"])
    return seen


async def run_way(http: httpx.AsyncClient, url: str, way: str, keep: bool, requests: int) -> list[str]:
    slots = asyncio.Semaphore(OVERLAP)
    ids = [f"{way}{'-keep' if keep else ''}-{index}" for index in range(requests)]

    async def one(request_id: str) -> None:
        async with slots:
            params = {"id": request_id, "when": way, "wait": str(random.randint(0, 100))}
            if keep:
                params["keep"] = "1"
            response = await http.get(url, params=params)
            response.raise_for_status()

    await asyncio.gather(*(one(request_id) for request_id in ids))
    return ids


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    port = free_port()
    with tempfile.NamedTemporaryFile("w", suffix=".capnp") as config_file:
        config_file.write(config(port))
        config_file.flush()
        workerd = subprocess.Popen([str(WORKERD), "serve", config_file.name, "--experimental"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in workerd.stdout or ()), daemon=True)
        reader.start()
        url = f"http://127.0.0.1:{port}/"
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                deadline = time.monotonic() + 30
                while True:
                    try:
                        (await http.get(url)).raise_for_status()
                        break
                    except httpx.HTTPError:
                        if time.monotonic() > deadline or workerd.poll() is not None:
                            raise SystemExit("workerd did not start:\n" + "\n".join(lines[-20:])) from None
                        await asyncio.sleep(0.1)
                runs = [(way, keep, await run_way(http, url, way, keep, args.requests)) for way, keep in WAYS]
            await asyncio.sleep(SETTLE_S)
        finally:
            workerd.terminate()
            workerd.wait(timeout=10)
            reader.join(timeout=5)
    seen = events_by_id(lines)
    for way, keep, ids in runs:
        never = [seen.get(request_id, []) for request_id in ids if "cancelled" not in seen.get(request_id, [])]
        mid_pull = sum(events[-1:] == ["pull"] for events in never)
        label = f"{way}{', keep' if keep else ''}"
        print(f"{label:12} {len(ids) - len(never)}/{len(ids)} cancels reached the producer; the other {len(never)} streams "
              f"were left without one, {mid_pull} of them in a pull whose timer never fired")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
