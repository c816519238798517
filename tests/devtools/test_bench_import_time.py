"""bench/import_time.mjs imports the Worker's modules in Pyodide with the runtime's
`workers` module stubbed: a name the Worker newly takes from `workers` breaks it, and only
`make bench` would notice, so it is run here once, briefly."""

from __future__ import annotations

import json
import subprocess

from tests.frontends.conftest import NODE, ROOT


def test_the_import_benchmark_imports_the_whole_worker():
    finished = subprocess.run([str(NODE), str(ROOT / "bench" / "import_time.mjs"), "1"], check=False, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-2000:]
    result = json.loads(finished.stdout.strip().splitlines()[-1])
    assert result["entry_ms"]["median"] > 0
