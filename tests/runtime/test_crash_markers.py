"""How the harness recognises a crash of the runtime in its output (on CPython: no runtime)."""

from __future__ import annotations

import pytest

from tests.harness.runtime import LocalRuntime, RuntimeOptions, crash_lines

ERROR = "\x1b[31m✘ \x1b[41;31m[\x1b[41;97mERROR\x1b[41;31m]\x1b[0m \x1b[1m"
RESET = "\x1b[0m"

# As wrangler printed them when a deeply nested request body overflowed Pyodide's stack.
CRASH_OUTPUT = [
    pytest.param(
        ERROR + "Pyodide has suffered a fatal error. Please report this to the Pyodide maintainers." + RESET,
        "✘ [ERROR] Pyodide has suffered a fatal error. Please report this to the Pyodide maintainers.",
        id="pyodide-fatal-error",
    ),
    pytest.param(
        ERROR + "*** Fatal uncaught kj::Exception: workerd/server/server/bridge.rs:929: failed: abortIsolate() called, "
        "terminating process; reason = Python worker fatal error: RangeError: Maximum call stack size exceeded" + RESET,
        "✘ [ERROR] *** Fatal uncaught kj::Exception: workerd/server/server/bridge.rs:929: failed: abortIsolate() called, "
        "terminating process; reason = Python worker fatal error: RangeError: Maximum call stack size exceeded",
        id="workerd-abort-isolate",
    ),
    pytest.param(
        "\x1b[33m[wrangler:warn]\x1b[0m The Workers runtime crashed unexpectedly and is being restarted (crash #1).",
        "[wrangler:warn] The Workers runtime crashed unexpectedly and is being restarted (crash #1).",
        id="wrangler-restart",
    ),
    pytest.param(
        "*** Fatal \x1b[1muncaught\x1b[0m kj::Exception",
        "*** Fatal uncaught kj::Exception",
        id="colour-code-inside-a-marker",
    ),
]

HARMLESS_OUTPUT = [
    pytest.param("\x1b[32m[wrangler:info]\x1b[0m Ready on http://127.0.0.1:8787", id="ready"),
    pytest.param('{"event":"chat_stream_failed","request_id":"ab12","code":"generation_failed"}', id="worker-log"),
    pytest.param(ERROR + "Error inside ProxyWorker: POST http://127.0.0.1:8787/api/chat: Network connection lost." + RESET, id="lost-request"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize(("line", "reported"), CRASH_OUTPUT)
def test_a_crash_line_is_reported_without_its_colour_codes(line, reported):
    assert crash_lines([line]) == [reported]


@pytest.mark.parametrize("line", HARMLESS_OUTPUT)
def test_ordinary_output_is_not_a_crash(line):
    assert crash_lines([line]) == []


def test_a_runtime_reports_only_the_crash_lines_from_the_index_asked_for():
    runtime = LocalRuntime(RuntimeOptions())  # never started: only its collected lines matter
    runtime.lines += ["[wrangler:info] Ready on http://127.0.0.1:1", "The Workers runtime crashed unexpectedly (crash #1).",
                      '{"event":"ai_run"}', "The Workers runtime crashed unexpectedly (crash #2)."]
    assert runtime.crash_lines() == ["The Workers runtime crashed unexpectedly (crash #1).",
                                     "The Workers runtime crashed unexpectedly (crash #2)."]
    assert runtime.crash_lines(since=2) == ["The Workers runtime crashed unexpectedly (crash #2)."]
    assert runtime.crash_lines(since=4) == []
