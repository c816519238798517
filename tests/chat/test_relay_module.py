"""src/chat/stream/relay.mjs, the relay's per-chunk plumbing, on its own in Node with stand-ins
for the Python callbacks (a unit test of pure JS; the crossing itself is tested in the
runtime, tests/runtime)."""

from __future__ import annotations

import json
import subprocess

from tests.frontends.conftest import NODE, ROOT

SLICE = 64 * 1024


def test_the_plumbing_decodes_across_chunks_slices_big_ones_and_stops_when_told():
    finished = subprocess.run([str(NODE), str(ROOT / "tests" / "chat" / "relay_module_check.mjs")], check=False,
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    results = json.loads(finished.stdout)
    assert results["split"] == "a🚀b\ufeffc"
    # "é" straddles the first slice's end: the first slice hands over one character less.
    assert results["slices"] == [SLICE - 1, SLICE, 10]
    assert results["sliced_text_intact"] and results["sliced_sent"] == 3
    assert results["stops"] == 2, "nothing is handed over after Python says the stream is over"
    assert results["views"] == "dvab"
    assert results["not_bytes"] == ["TypeError", 0]
    assert results["cancelled"]
