"""Finding the local runtime's workerd processes, for memory and CPU readings."""

from __future__ import annotations

import os
from pathlib import Path

from tests.harness.runtime import LocalRuntime

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def workerd_pids(runtime: LocalRuntime) -> list[int]:
    """workerd processes started by this runtime's launcher: through wrangler (dev.py), or
    directly (workerd_direct.py, the production-like runtime)."""
    assert runtime._process is not None
    parents: dict[int, int] = {}
    commands: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                commands[int(entry.name)] = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [runtime._process.pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent:
                frontier.append(child)
                if b"workerd" in commands.get(child, b"") and b"serve" in commands.get(child, b""):
                    found.append(child)
    return found


def workerd_rss_bytes(runtime: LocalRuntime) -> int:
    total = 0
    for pid in workerd_pids(runtime):
        fields = Path(f"/proc/{pid}/statm").read_text().split()
        total += int(fields[1]) * PAGE
    return total


def workerd_cpu_seconds(runtime: LocalRuntime) -> float:
    total = 0
    for pid in workerd_pids(runtime):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICKS
