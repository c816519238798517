"""The chat page's markdown re-render in headless Chromium: how long the main thread is
blocked while pathological and long answers stream (docs/benchmarks.md, "The page's
markdown"), issue 33's 120,000-character document among them. Runs the `heavy` scenario of
tests/frontends/page_driver.mjs, alone in its
browser, RUNS times against one local runtime under `wrangler dev`.

    python bench/page_markdown_bench.py [RUNS]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.frontends.conftest import drive_pages  # noqa: E402
from tests.frontends.upstreams import MARKDOWN  # noqa: E402
from tests.harness.runtime import LocalRuntime  # noqa: E402

FIGURES = ("maxGapMs", "longTasks", "longestTaskMs", "elapsedMs")


def main(runs: int) -> None:
    runtime = LocalRuntime(MARKDOWN).start()
    try:
        for _ in range(runs):
            report = drive_pages(runtime.url, ("heavy",))["heavy"]
            figures = {
                name: {key: report[name][key] for key in FIGURES} | {"plain": report[name]["rendered"]["plain"]}
                for name in ("document", "long", "table", "deep")
            }
            figures["reopened"] = report["reopened"]
            print(json.dumps(figures))
    finally:
        runtime.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
