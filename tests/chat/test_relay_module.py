"""src/chat/stream/relay.mjs, the relay's plumbing, on its own in Node's web streams with
stand-ins for the Python callbacks (a unit test of pure JS; the crossing itself is tested
in the runtime, tests/runtime)."""

from __future__ import annotations

import json
import subprocess

from tests.frontends.conftest import NODE, ROOT

SLICE = 64 * 1024


def test_the_plumbing_owns_the_stream_and_python_answers():
    finished = subprocess.run([str(NODE), str(ROOT / "tests" / "chat" / "relay_module_check.mjs")], check=False,
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    results = json.loads(finished.stdout)
    assert results["split"] == "a🚀b\ufeffc"
    assert results["split_body"] == "<meta>A🚀B\ufeffC<end>" and results["split_ended"] == [False]
    # "é" straddles the first slice's end: the first slice hands over one character less.
    assert results["slices"] == [SLICE - 1, SLICE, 10]
    assert results["sliced_text_intact"]
    assert results["stops"] == [2, True, True, [True]], "nothing is handed over after last(), and the upstream is cancelled"
    assert results["failed"] == [[True], "<meta>X<end>"]
    assert results["views"] == "dvab"
    assert results["not_bytes"] == ["TypeError", 0, "<meta><broken>", True]
    assert results["ticks"] == [3, "<meta><ping><timeout>", True], "ticks until one answers last()"
    assert results["end"] == ["<meta><stopped>", True, 1], "end() sends once, terminates and cancels the upstream"
    assert results["left"] == [1, True, 1, []], "a client that leaves cancels the upstream; nothing is called after onEnded"
    # A callback that throws ends the stream at once (cut off, never a hang, never shown whole).
    assert results["throws"] == {
        "start": ["", True, 1, "bug in start"],
        "text": ["<meta>", True, 1, "bug in text"],
        "tick": ["<meta>X", True, 1, "bug in tick"],
        "broken": ["<meta>", True, 1, "bug in broken"],
        "ended": ["<meta>X", False, 0, "bug in ended"],
        "delay": ["<meta>", True, 1, "bug in delay"],
    }
