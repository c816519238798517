"""What the largest image request allowed costs the isolate's memory, in workerd alone.

    python bench/image_memory.py [--rounds 2]

Side by side in one runtime (devtools/workerd_direct.py, the production-like one): after a
text turn, then after the largest request the image bounds allow (two images of
MAX_REQUEST_IMAGE_BYTES / 2 each, an emoji in the question: the worst case for how Python
stores text), on /v1 and on the resumable /api/chat, then after four of them at once.

Two figures each time:
- Pyodide's heap (`HEAPU8.length`), the figure docs/images.md quotes against the 128 MB an
  isolate may use. It is WebAssembly memory, which grows and never shrinks, so after each
  step it is the high-water mark so far. The Worker is served from a copy of src/ whose
  main module wraps the real one and logs it after each request (nothing in src/ changes);
- workerd's resident memory, which also holds V8's heaps and the emulator's isolate, so it
  is larger and noisier.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from chat.api import images  # noqa: E402
from tests.harness.processes import workerd_rss_bytes  # noqa: E402
from tests.harness.runtime import LocalRuntime, RuntimeOptions  # noqa: E402
from tests.image_files import image_part, png  # noqa: E402

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
MIB = 1024 * 1024

# The real main module, its `handle` wrapped to log Pyodide's heap after each request.
HEAP_ENTRY = '''
import json

import entry
import pyodide_js
from entry import ChatStream, Default

__all__ = ["ChatStream", "Default"]
_handle = entry.handle


async def _measured(request, env, ctx):
    response = await _handle(request, env, ctx)
    print(json.dumps({"event": "bench_heap", "bytes": int(pyodide_js._module.HEAPU8.length)}))
    return response


entry.handle = _measured  # what entry.Default.fetch calls
'''


def largest_body(resumable: bool) -> dict[str, object]:
    half = png(2, 2)
    half += b"\x00" * (images.MAX_REQUEST_IMAGE_BYTES // 2 - len(half))
    content = [{"type": "text", "text": "What is in these pictures? \U0001f600"}, image_part(half), image_part(half)]
    body: dict[str, object] = {"messages": [{"role": "user", "content": content}]}
    return {**body, "resumable": True} if resumable else {**body, "model": GEMMA}


async def measure(runtime: LocalRuntime, rounds: int) -> None:
    async with httpx.AsyncClient(timeout=120) as http:
        async def send(resumable: bool = False) -> None:
            path = "/api/chat" if resumable else "/v1/chat/completions"
            response = await http.post(runtime.url + path, json=largest_body(resumable))
            assert response.status_code == 200, response.text[:300]
            await response.aread()

        async def report(name: str) -> None:
            await asyncio.sleep(0.5)  # the log line is read from the process's output
            heap = [record["bytes"] for record in runtime.records() if record["event"] == "bench_heap"][-1]
            print(f"{name}: Pyodide's heap {heap / MIB:.1f} MiB, workerd RSS {workerd_rss_bytes(runtime) / MIB:.0f} MiB")

        await http.post(runtime.url + "/api/chat", json={"messages": [{"role": "user", "content": "hi"}]})
        await report("after a text turn")
        steps = [("the largest request, /v1", lambda: send()), ("the largest request, resumable /api/chat", lambda: send(True)),
                 ("four largest requests at once, /v1", lambda: asyncio.gather(*(send() for _ in range(4))))]
        for name, step in steps:
            for round_ in range(rounds):
                await step()
                await report(f"{name}, round {round_ + 1}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        worker = Path(scratch) / "src"
        shutil.copytree(ROOT / "src", worker, ignore=shutil.ignore_patterns("__pycache__"))
        (worker / "heap_entry.py").write_text(HEAP_ENTRY)
        runtime = LocalRuntime(RuntimeOptions(ai_pace=0, ai_format=None, workerd_direct=True, main=str(worker / "heap_entry.py"))).start()
        try:
            print(f"request: {images.MAX_REQUEST_IMAGE_BYTES // MIB} MiB of images, "
                  f"{len(str(largest_body(False))) / MIB:.1f} MiB of JSON")
            asyncio.run(measure(runtime, args.rounds))
        finally:
            runtime.stop()


if __name__ == "__main__":
    main()
