"""What rendering markdown on a terminal costs the CLI (docs/benchmarks.md, "The CLI on a
terminal"): the page's long answers (issue 33's 120,000-character document, a 2,000-row
table, 10,000 nested lists, a 10,000-token answer unpaced) through clients/chat_cli
three ways side by side in one run: piped, `--plain` on a pseudo-terminal, and rendered on
one. For each: wall and CPU seconds and peak memory of the CLI (GNU time), and the longest
the terminal went without output from the first output on. One local runtime (workerd
alone), RUNS rounds.

    python bench/cli_render_bench.py [RUNS]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pexpect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.frontends.conftest import CLI, ROOT  # noqa: E402
from tests.frontends.upstreams import (  # noqa: E402
    DEEP_QUESTION,
    DOCUMENT_QUESTION,
    LONG_QUESTION,
    MARKDOWN,
    TABLE_QUESTION,
)
from tests.harness.runtime import LocalRuntime  # noqa: E402

ANSWERS = {"document": DOCUMENT_QUESTION, "table": TABLE_QUESTION, "deep": DEEP_QUESTION, "long": LONG_QUESTION}
MODES = ("piped", "plain", "rendered")
TIME = "/usr/bin/time"


def timed(command: list[str], measures: Path) -> list[str]:
    return [TIME, "-o", str(measures), "-f", '{"wall_s": %e, "cpu_s": %U + %S, "max_rss_kb": %M}', *command]


def measured(path: Path) -> dict[str, float]:
    text = path.read_text().strip().splitlines()[-1]  # GNU time may say "Command exited with..." first
    wall, cpu, rss = json.loads(text.replace('"cpu_s": ', '"cpu_s": "').replace(', "max_rss_kb"', '", "max_rss_kb"')).values()
    user, system = (float(part) for part in cpu.split(" + "))
    return {"wall_s": wall, "cpu_s": round(user + system, 2), "max_rss_mb": round(rss / 1024, 1)}


def run(url: str, question: str, mode: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        measures = Path(scratch) / "time.json"
        args = [sys.executable, str(CLI), "--url", url, *(["--plain"] if mode == "plain" else []), question]
        if mode == "piped":
            started = time.monotonic()
            finished = subprocess.run(timed(args, measures), cwd=ROOT, capture_output=True, timeout=600)
            assert finished.returncode == 0, finished.stderr[-500:]
            return {**measured(measures), "longest_silence_s": None, "wall_seen_s": round(time.monotonic() - started, 2)}
        child = pexpect.spawn(TIME, timed(args, measures)[1:], cwd=str(ROOT), dimensions=(40, 120), timeout=600,
                              env={**os.environ, "TERM": "xterm-256color"})
        started = time.monotonic()
        last: float | None = None  # the silence counts from the first output: not the start-up
        longest = 0.0
        while True:
            try:
                child.read_nonblocking(65536, timeout=600)
            except pexpect.EOF:
                break
            now = time.monotonic()
            longest, last = max(longest, now - (last or now)), now
        child.close()
        assert child.exitstatus == 0, child.exitstatus
        return {**measured(measures), "longest_silence_s": round(longest, 2), "wall_seen_s": round((last or started) - started, 2)}


def main(runs: int) -> None:
    runtime = LocalRuntime(MARKDOWN).start()
    try:
        for _ in range(runs):
            for name, question in ANSWERS.items():
                print(json.dumps({"answer": name, **{mode: run(runtime.url, question, mode) for mode in MODES}}), flush=True)
    finally:
        runtime.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
