"""How the harness reads a runtime's output (on CPython: no runtime): which test each line
belongs to, and which lines report a crash or an error."""

from __future__ import annotations

import pytest

from tests.harness.output import NO_TEST, RuntimeOutput, crash_lines, is_error, plain
from tests.harness.pool import Lease
from tests.harness.runtime import LocalRuntime, RuntimeOptions

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
    pytest.param(ERROR + "Uncaught InferenceUpstreamError: 3040: Capacity temporarily exceeded, please try again. Error" + RESET,
                 id="the-emulated-binding-failing-as-scripted"),
]


@pytest.mark.parametrize(("line", "reported"), CRASH_OUTPUT)
def test_a_crash_line_is_reported_without_its_colour_codes(line, reported):
    assert crash_lines([line]) == [reported]


@pytest.mark.parametrize("line", HARMLESS_OUTPUT)
def test_ordinary_output_is_not_a_crash(line):
    assert crash_lines([line]) == []


def test_a_runtime_reports_only_the_crash_lines_from_the_index_asked_for():
    runtime = LocalRuntime(RuntimeOptions())  # never started: only its collected lines matter
    for line in ["[wrangler:info] Ready on http://127.0.0.1:1", "The Workers runtime crashed unexpectedly (crash #1).",
                 '{"event":"ai_run"}', "The Workers runtime crashed unexpectedly (crash #2)."]:
        runtime.output.add(line)
    assert runtime.crash_lines() == ["The Workers runtime crashed unexpectedly (crash #1).",
                                     "The Workers runtime crashed unexpectedly (crash #2)."]
    assert runtime.crash_lines(since=2) == ["The Workers runtime crashed unexpectedly (crash #2)."]
    assert runtime.crash_lines(since=4) == []


A = "a" * 32  # request ids as the Worker makes them: 32 hex digits
B = "b" * 32


def record(event: str, request_id: str | None = None, **fields: str) -> str:
    named = "" if request_id is None else f',"request_id":"{request_id}"'
    extra = "".join(f',"{key}":"{value}"' for key, value in fields.items())
    return '{"event":"' + event + '"' + named + extra + "}"


def test_a_request_s_lines_belong_to_the_test_that_first_saw_it_even_when_they_come_later():
    output = RuntimeOutput()
    output.lease = 1
    output.add(record("chat_stream_started", A))
    output.add("[wrangler:info] POST /v1/chat/completions 200 OK (5ms)")
    output.add(record("async_error", A, level="error"))  # after the test ended, before another took the runtime
    output.lease = 2
    output.add(record("async_error", A, level="error"))  # the first test's request, minutes later
    output.add("a line of no request")
    output.add(record("chat_stream_ended", A))
    output.add(record("chat_stream_started", B))
    assert output.lines_of(1) == [record("chat_stream_started", A), "[wrangler:info] POST /v1/chat/completions 200 OK (5ms)",
                                  record("async_error", A, level="error"), record("async_error", A, level="error"),
                                  record("chat_stream_ended", A)]
    assert output.lines_of(2) == ["a line of no request", record("chat_stream_started", B)]
    assert output.lines_of(NO_TEST) == []
    assert output.lines_of(1, since=4) == [record("chat_stream_ended", A)]
    assert output.lines_of({1, 2}, since=5) == [record("chat_stream_ended", A), record("chat_stream_started", B)]


def test_a_claimed_request_is_the_claiming_test_s_though_its_first_line_comes_after_the_test():
    output = RuntimeOutput()
    output.lease = 1
    output.claim(A)  # read from the response's x-request-id
    output.lease = 2
    output.add(record("chat_collected", A))
    assert output.lines_of(1) == [record("chat_collected", A)] and output.lines_of(2) == []


def test_a_runtime_reads_only_the_lines_of_the_test_holding_it():
    runtime = LocalRuntime(RuntimeOptions())  # never started: only its collected lines matter
    runtime.output.lease = 1
    runtime.output.add(record("chat_stream_started", A))
    runtime.output.lease = 2
    mark = len(runtime.lines)
    runtime.output.add(record("chat_stream_ended", A))
    runtime.output.add(record("chat_stream_started", B))
    assert [r["request_id"] for r in runtime.records(since=0)] == [B]
    assert runtime.own_lines(mark) == [record("chat_stream_started", B)]
    runtime.output.shared.add(1)  # a run made for several tests, read by the second
    assert [r["request_id"] for r in runtime.records(since=0)] == [A, A, B]
    assert runtime.error_lines() == [] and len(runtime.lines) == 3


ERROR_OUTPUT = [
    pytest.param(record("async_error", A, level="error", message="Task was destroyed but it is pending!"), id="worker-async-error"),
    pytest.param(record("internal_error", A, level="error", route="relay"), id="worker-internal-error"),
    pytest.param("Task was destroyed but it is pending!", id="python-pending-task"),
    pytest.param("Future exception was never retrieved", id="python-unretrieved"),
    pytest.param("Traceback (most recent call last):", id="python-traceback"),
    pytest.param(ERROR + "Uncaught (in promise) TypeError: x is not a function" + RESET, id="workerd-uncaught"),
    pytest.param(ERROR + "Pyodide has suffered a fatal error. Please report this to the Pyodide maintainers." + RESET, id="crash"),
]


@pytest.mark.parametrize("line", ERROR_OUTPUT)
def test_an_error_line_is_recognised(line):
    assert is_error(plain(line))


@pytest.mark.parametrize("line", HARMLESS_OUTPUT)
def test_ordinary_output_is_no_error(line):
    assert not is_error(plain(line))


def test_a_test_expects_only_the_errors_it_names():
    lease = Lease(3, "tests/x.py::test_y", ("model_not_served",))
    assert lease.expects(record("model_not_served", A, level="error"))
    assert not lease.expects(record("internal_error", A, level="error"))
