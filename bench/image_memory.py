"""What the largest image request allowed costs the isolate's memory, in workerd alone.

    python bench/image_memory.py [--rounds 3]

Side by side in one runtime (devtools/workerd_direct.py, the production-like one): workerd's
resident memory after a text turn, then after the largest request the image bounds allow
(two images of MAX_REQUEST_IMAGE_BYTES / 2 each, on /v1 and on the resumable /api/chat),
then after four of them at once. Pyodide's heap is WebAssembly memory, which grows and never
shrinks, so the growth after each step is its high-water mark: the figure docs/images.md
quotes against the 128 MB an isolate may use. RSS includes the emulator's isolate (the same
process), which holds each request's images once more while it reads their headers.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
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


def largest_body(resumable: bool) -> dict[str, object]:
    half = png(2, 2)
    half += b"\x00" * (images.MAX_REQUEST_IMAGE_BYTES // 2 - len(half))
    # A character above U+FFFF in the question: the worst case for how Python stores text.
    content = [{"type": "text", "text": "What is in these pictures? \U0001f600"}, image_part(half), image_part(half)]
    body: dict[str, object] = {"messages": [{"role": "user", "content": content}]}
    return {**body, "resumable": True} if resumable else {**body, "model": GEMMA}


async def measure(runtime: LocalRuntime, rounds: int) -> None:
    async with httpx.AsyncClient(timeout=120) as http:
        async def send(resumable: bool = False) -> None:
            path = "/api/chat" if resumable else "/v1/chat/completions"
            response = await http.post(runtime.url + path, json=largest_body(resumable))
            assert response.status_code == 200, response.text[:300]

        await http.post(runtime.url + "/api/chat", json={"messages": [{"role": "user", "content": "hi"}]})
        base = workerd_rss_bytes(runtime)
        print(f"after a text turn: {base / MIB:.0f} MiB (workerd, both isolates)")
        steps = [("one largest request, /v1", lambda: send()), ("one largest request, resumable /api/chat", lambda: send(True)),
                 ("four largest requests at once, /v1", lambda: asyncio.gather(*(send() for _ in range(4))))]
        for name, step in steps:
            for round_ in range(rounds):
                await step()
                print(f"{name}, round {round_ + 1}: +{(workerd_rss_bytes(runtime) - base) / MIB:.0f} MiB over the text turn")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runtime = LocalRuntime(RuntimeOptions(ai_pace=0, ai_format=None, workerd_direct=True)).start()
    try:
        print(f"request: {images.MAX_REQUEST_IMAGE_BYTES // MIB} MiB of images, "
              f"{len(str(largest_body(False))) / MIB:.1f} MiB of JSON")
        asyncio.run(measure(runtime, args.rounds))
    finally:
        runtime.stop()


if __name__ == "__main__":
    main()
