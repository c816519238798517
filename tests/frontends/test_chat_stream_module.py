"""public/chat-stream.js, the stream reader other frontends import, run in Node 24: once
against the real runtime, and on bodies the Worker never sends, from a local server."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.frontends.conftest import NODE, ROOT
from tests.frontends.upstreams import SLOW_ANSWER, SLOW_ANSWER_CHUNKS, expected_answer

CHECK = ROOT / "tests" / "frontends" / "stream_module_check.mjs"
QUESTION = "Is the module the same one the page uses?"


_results: dict[str, dict[str, Any]] = {}


@pytest.fixture
def results(start_runtime) -> dict[str, Any]:
    """The check's observations, run once per runtime."""
    runtime = start_runtime(SLOW_ANSWER)
    if runtime.url not in _results:
        _results[runtime.url] = run_check(runtime.url)
    return _results[runtime.url]


def run_check(url: str) -> dict[str, Any]:
    finished = subprocess.run([str(NODE), str(CHECK), url, QUESTION], check=False, cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    outcome = json.loads(finished.stdout.strip().split("\n")[-1])  # not splitlines: U+2028
    assert "failed" not in outcome
    return outcome


def test_the_reader_gives_the_workers_answer_with_its_callbacks_and_done(results):
    worker = results["worker"]
    assert worker["kind"] == "complete" and (worker["cut"], worker["skipped"]) == (None, 0), "a whole answer"
    assert worker["text"] == expected_answer(QUESTION) == "".join(worker["seen"]["deltas"])
    assert worker["chunks"] == SLOW_ANSWER_CHUNKS == worker["done"]["chunks"]
    assert worker["seen"]["metas"][0]["request_id"] == worker["requestId"]
    assert worker["model"] == "@cf/zai-org/glm-4.7-flash"


def test_byte_by_byte_delivery_any_line_end_comments_and_unknown_events_are_read_right(results):
    mixed = results["mixed"]
    assert mixed["kind"] == "complete" and mixed["requestId"] == "r-1"
    assert mixed["seen"]["deltas"] == ["Grüße ", "🚀 line\u2028sep\nnext"]
    assert mixed["seen"]["reasoning"] == ["thinking"] and mixed["seen"]["pings"] == 1


def test_tool_call_events_reach_their_callbacks_and_the_outcome_lists_the_whole_calls(results):
    tools = results["tools"]
    assert tools["kind"] == "complete" and tools["text"] == "Checking."
    assert tools["done"]["finish_reason"] == "tool_calls" and tools["done"]["tool_calls"] == 2
    seen = tools["seen"]
    assert seen["toolStarts"] == [{"index": 0, "id": "call_1", "name": "current_time"}, {"index": 1, "id": "call_2", "name": "current_time"}]
    assert seen["toolDeltas"] == [
        {"index": 0, "arguments": '{"timezone":'}, {"index": 0, "arguments": '"UTC"}'}, {"index": 1, "arguments": '{"timezone": 🕰'},
    ], "a fragment that is not text is skipped"
    whole = {"index": 0, "id": "call_1", "name": "current_time", "arguments": '{"timezone":"UTC"}', "input": {"timezone": "UTC"}}
    broken = {"index": 1, "id": "call_2", "name": "current_time", "arguments": '{"timezone": 🕰', "input": None, "input_error": "Expecting value"}
    assert seen["toolCalls"] == tools["toolCalls"] == [whole, broken], "a call with a name that is not text is skipped"


def test_a_body_that_ends_without_a_terminal_event_is_truncated_with_the_text_so_far(results):
    cut = results["cut"]
    assert (cut["kind"], cut["text"], cut["chunks"], cut["requestId"]) == ("truncated", "half an", 1, "r-2")


def test_aborting_the_signal_is_cancelled_and_closes_the_connection(results):
    hang = results["hang"]
    assert (hang["kind"], hang["text"]) == ("cancelled", "before stop")
    assert hang["serverSawClose"] is True


def test_http_errors_give_the_json_code_and_retry_after_or_a_generic_http_error(results):
    limited = results["limited"]
    assert (limited["kind"], limited["status"], limited["code"], limited["retryAfter"], limited["requestId"]) == (
        "error", 429, "rate_limited", 7, "r-4")
    proxy = results["proxyError"]
    assert (proxy["kind"], proxy["status"], proxy["code"]) == ("error", 502, "http_error")
    assert (results["nobody"]["kind"], results["nobody"]["code"]) == ("error", "network_error")


@pytest.mark.parametrize(("ending", "cut", "skipped"), [
    pytest.param("stop", None, 0, id="stop"),
    pytest.param("toolCalls", None, 0, id="tool_calls"),
    pytest.param("functionCall", None, 0, id="function_call"),
    pytest.param("unsaid", None, 0, id="finish_reason null: the model did not say"),
    pytest.param("absent", None, 0, id="no finish_reason or skipped at all"),
    pytest.param("length", "length", 0, id="length"),
    pytest.param("contentFilter", "content_filter", 0, id="content_filter"),
    pytest.param("other", "other", 0, id="other"),
    pytest.param("unknown", "other", 0, id="a reason not documented yet is other"),
    pytest.param("stopWithGaps", None, 3, id="stop with skipped frames"),
    pytest.param("lengthWithGaps", "length", 1, id="length with skipped frames"),
    pytest.param("skippedNotACount", None, 0, id="skipped that is not a count"),
    pytest.param("skippedNegative", None, 0, id="skipped below 0"),
])
def test_a_done_says_whether_the_answer_was_cut_short_and_how_many_frames_were_skipped(results, ending, cut, skipped):
    outcome = results["endings"][ending]
    assert (outcome["kind"], outcome["text"]) == ("complete", "Some text"), "a `done` always ends the stream as complete"
    assert (outcome["cut"], outcome["skipped"]) == (cut, skipped)


def test_data_that_is_not_json_is_a_malformed_stream_error(results):
    assert (results["garbled"]["kind"], results["garbled"]["code"]) == ("error", "malformed_stream")


def test_a_resumable_answer_from_the_worker_names_its_stream_and_needs_no_reconnection(results):
    outcome = results["workerResumable"]
    assert outcome["kind"] == "complete" and outcome["text"] == expected_answer(QUESTION)
    assert len(outcome["streamId"]) == 64 and outcome["resumed"] == 0
    assert outcome["seen"]["lastStream"]["streamId"] == outcome["streamId"]
    assert int(outcome["seen"]["lastStream"]["lastEventId"]) == outcome["chunks"] + 2  # meta and done


def test_a_dropped_resumable_answer_reconnects_after_its_last_event_and_completes(results):
    outcome = results["dropped"]
    assert outcome["kind"] == "complete" and outcome["text"] == "one two three"
    assert outcome["resumed"] == 1 and outcome["seen"]["reconnecting"] == [1]
    assert outcome["seen"]["deltas"] == ["one ", "two ", "three"], "nothing twice, nothing missing"
    first, again = outcome["log"]
    assert first["body"]["resumable"] is True
    assert again == {"method": "GET", "path": "/api/chat/streams/s-1", "lastEventId": "3"}


def test_a_resumable_answer_that_is_gone_is_truncated_after_one_try(results):
    outcome = results["gone"]
    assert outcome["kind"] == "truncated" and outcome["text"] == "one " and outcome["resumed"] == 1


def test_stopping_a_resumable_answer_deletes_it_on_the_server(results):
    outcome = results["stopped"]
    assert outcome["kind"] == "cancelled"
    assert outcome["log"] == [{"method": "DELETE", "path": "/stop/api/chat/streams/s-1"}]
