"""OpenAI's chunk and completion encodings, and stop sequences, through the Reframer."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse import ERROR_MESSAGES, OpenAIChunkEncoder, OpenAICompletionEncoder, Reframer, openai_error, openai_finish_reason
from sse._stop import StopScanner
from tests.sse.support import feed, sent, stats, text_and_bytes

USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def native(*texts: str, usage: dict[str, int] | None = USAGE, done: bool = True) -> str:
    # Compact, as Workers AI writes them: whole events of this shape take the fast path.
    frames = [f"data: {json.dumps({'response': text, 'p': 'abc'}, separators=(',', ':'))}\n\n" for text in texts]
    if usage is not None:
        frames.append(f"data: {json.dumps({'response': '', 'usage': usage})}\n\n")
    if done:
        frames.append("data: [DONE]\n\n")
    return "".join(frames)


def stream_events(output: str) -> list[Any]:
    """The data of each event ("[DONE]" as it is), pings as "ping"."""
    out: list[Any] = []
    for block in sent(output).decode().split("\n\n")[:-1]:
        if block.startswith(":"):
            out.append("ping")
        else:
            assert block.startswith("data: ") and "\n" not in block
            data = block[len("data: "):]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def chunked(upstream: str, pieces: list[str] | list[bytes] | None = None, *, include_usage: bool = False, max_tokens: int | None = None,
            stop: tuple[str, ...] = (), finish: bool = True) -> list[Any]:
    encoder = OpenAIChunkEncoder(created=1764000000, max_tokens=max_tokens, include_usage=include_usage)
    reframer = Reframer(request_id="r1", model="@cf/m", encoder=encoder, rng=random.Random(3), stop=stop)
    out = reframer.start()
    for piece in pieces if pieces is not None else [upstream]:
        out += feed(reframer, piece)
    if finish:
        out += reframer.finish()
    return stream_events(out)


def contents(events: list[Any]) -> str:
    return "".join(e["choices"][0]["delta"].get("content", "") for e in events if isinstance(e, dict) and e.get("choices"))


def test_a_stream_is_role_then_deltas_then_finish_then_usage_then_done():
    events = chunked(native("Hel", "lo \u00e9\\"), include_usage=True)
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(e["id"] == "chatcmpl-r1" and e["created"] == 1764000000 and e["model"] == "@cf/m" for e in events[:-1])
    assert all(e["object"] == "chat.completion.chunk" for e in events[:-1])
    assert contents(events) == "Hello \u00e9\\"
    assert events[-3]["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]
    assert events[-2]["choices"] == [] and events[-2]["usage"] == USAGE
    assert events[-1] == "[DONE]"
    assert all(len(e["obfuscation"]) <= 32 for e in events[1:3])


def test_the_fast_path_and_the_general_path_give_the_same_chunks():
    frames = native("a", "b\n \u00e9 \\ \"q\"", usage=None, done=False)
    done = "data: [DONE]\n\n"
    fast = chunked("", [frames, done])  # whole native events: copied through without decoding
    general = chunked("", [frames[:5], frames[5:], done])

    def strip(events: list[Any]) -> list[Any]:
        return [{k: v for k, v in e.items() if k != "obfuscation"} if isinstance(e, dict) else e for e in events]

    assert strip(fast) == strip(general) and contents(fast) == "ab\n \u00e9 \\ \"q\""


def test_a_stream_is_sent_with_the_stream_headers_and_a_completion_as_json():
    headers = OpenAIChunkEncoder(created=1).headers
    assert headers["content-type"] == "text/event-stream; charset=utf-8" and headers["cache-control"] == "no-cache, no-store, no-transform"
    assert OpenAICompletionEncoder(created=1).headers == {"content-type": "application/json; charset=utf-8"}


def test_without_include_usage_or_without_usage_no_usage_chunk_is_sent():
    assert not any(isinstance(e, dict) and e.get("usage") for e in chunked(native("a")))
    events = chunked(native("a", usage=None), include_usage=True)
    assert events[-2]["choices"][0]["finish_reason"] == "stop" and events[-1] == "[DONE]"


@pytest.mark.parametrize(
    ("finish_reason", "usage", "max_tokens", "expected"),
    [
        pytest.param(None, USAGE, 3, "length", id="budget-used-up"),
        pytest.param(None, USAGE, 4, "stop", id="budget-left"),
        pytest.param(None, None, 3, "stop", id="no-usage"),
        pytest.param(None, USAGE, None, "stop", id="no-budget-known"),
        pytest.param("content_filter", USAGE, 3, "content_filter", id="upstream-says"),
        pytest.param("tool_calls", USAGE, 4, "tool_calls", id="tool-calls"),
        pytest.param("function_call", USAGE, 4, "stop", id="legacy-functions-never-sent-here"),
        pytest.param("other", USAGE, 3, "length", id="unknown-reason-budget-used-up"),
    ],
)
def test_finish_reason_is_the_upstreams_or_length_when_the_budget_was_used_up(finish_reason, usage, max_tokens, expected):
    assert openai_finish_reason(stats(finish_reason=finish_reason, usage=usage), max_tokens) == expected


def test_reasoning_is_reasoning_content_and_pings_are_comments():
    encoder = OpenAIChunkEncoder(created=1)
    reframer = Reframer(request_id="r1", model="m", encoder=encoder, max_padding=0)
    upstream = 'data: {"choices":[{"delta":{"reasoning_content":"hmm"}}]}\n\n'
    events = stream_events(reframer.feed(upstream) + reframer.ping())
    assert events[1]["choices"][0]["delta"] == {"reasoning_content": "hmm"} and events[1]["obfuscation"] == ""
    assert events[2] == "ping"


@pytest.mark.parametrize("code", sorted(ERROR_MESSAGES))
def test_a_failure_after_the_start_is_one_error_object_and_no_done(code):
    reframer = Reframer(request_id="r1", model="m", encoder=OpenAIChunkEncoder(created=1))
    events = stream_events(reframer.feed(native("Hel", done=False)) + reframer.fail(code))
    assert events[-1] == {"error": openai_error(code, ERROR_MESSAGES[code])["error"]}
    assert "[DONE]" not in events and events[-1]["error"]["param"] is None


def test_error_types_follow_the_status_of_the_code():
    assert openai_error("invalid_request", "m", "messages")["error"] == {
        "message": "m", "type": "invalid_request_error", "param": "messages", "code": "invalid_request"}
    assert openai_error("unauthorized", "m")["error"]["type"] == "authentication_error"
    assert openai_error("rate_limited", "m")["error"]["type"] == "rate_limit_error"
    assert openai_error("generation_failed", "m")["error"]["type"] == "server_error"
    assert openai_error("not-in-the-table", "m")["error"]["type"] == "server_error"


def test_a_stream_cut_before_done_ends_in_an_error_not_a_finish():
    events = chunked(native("Hel", done=False))
    assert events[-1]["error"]["code"] == "upstream_incomplete"
    assert not any(isinstance(e, dict) and e.get("choices") and e["choices"][0]["finish_reason"] for e in events)


# --- the non-streamed completion -------------------------------------------------------


def completion(upstream: str, *, finish: bool = True, stop: tuple[str, ...] = ()) -> tuple[Reframer, dict[str, Any]]:
    reframer = Reframer(request_id="r1", model="@cf/m", encoder=OpenAICompletionEncoder(created=5, max_tokens=3), stop=stop)
    out = reframer.start() + reframer.feed(upstream) + reframer.ping()
    if finish:
        out += reframer.finish()
    return reframer, json.loads(out)


def test_a_completion_is_one_object_with_the_whole_text_and_usage():
    reframer, body = completion(native("Hel", "lo"))
    assert body == {
        "id": "chatcmpl-r1", "object": "chat.completion", "created": 5, "model": "@cf/m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello", "refusal": None},
                     "logprobs": None, "finish_reason": "length"}],
        "usage": USAGE,
    }
    assert reframer.last_error_code is None
    assert OpenAICompletionEncoder(created=1).headers == {"content-type": "application/json; charset=utf-8"}


def test_a_completion_keeps_reasoning_apart_and_a_failure_is_only_the_error():
    upstream = 'data: {"choices":[{"delta":{"reasoning_content":"hmm","content":"ok"}}]}\n\ndata: [DONE]\n\n'
    _, body = completion(upstream)
    assert body["choices"][0]["message"]["reasoning_content"] == "hmm" and body["choices"][0]["message"]["content"] == "ok"
    reframer, failed = completion(upstream.replace("data: [DONE]\n\n", ""))
    assert failed == openai_error("upstream_incomplete", ERROR_MESSAGES["upstream_incomplete"])
    assert reframer.last_error_code == "upstream_incomplete"


# --- stop sequences ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("texts", "stops", "expected"),
    [
        pytest.param(["Once upon", " a time. TH", "E END more"], ("THE END",), "Once upon a time. ", id="split-across-frames"),
        pytest.param(["abc", "def"], ("x",), "abcdef", id="never-appears"),
        pytest.param(["ab", "cSTO", "P"], ("STOP", "cS"), "ab", id="earliest-of-several"),
        pytest.param(["STOP first"], ("STOP",), "", id="at-the-start"),
        pytest.param(["end with ST"], ("STOP",), "end with ST", id="a-held-prefix-is-sent-at-the-end"),
    ],
)
def test_stop_sequences_end_the_answer_just_before_them(texts, stops, expected):
    upstream = native(*texts)
    for how, pieces in text_and_bytes(upstream):
        events = chunked(upstream, pieces, stop=stops)
        assert contents(events) == expected, how
        assert events[-1] == "[DONE]" and events[-2]["choices"][0]["finish_reason"] == "stop", how


def test_a_stop_ends_the_stream_at_once_and_what_follows_is_ignored():
    reframer = Reframer(request_id="r1", model="m", encoder=OpenAIChunkEncoder(created=1), stop=("END",))
    first = reframer.feed(native("one END two", done=False, usage=None))
    assert reframer.terminated and stream_events(first)[-1] == "[DONE]"
    assert reframer.feed(native("more")) == "" and reframer.finish() == ""
    assert reframer.stats.finish_reason == "stop" and reframer.stats.chars == len("one ")


def test_a_non_streamed_answer_honours_stop_too():
    _, body = completion(native("a STOP b", usage=None), stop=("STOP",))
    assert body["choices"][0]["message"]["content"] == "a " and body["choices"][0]["finish_reason"] == "stop"


def test_empty_stop_sequences_are_refused():
    with pytest.raises(ValueError):
        StopScanner([""])
    with pytest.raises(ValueError):
        StopScanner([])


@given(st.lists(st.text(alphabet="abST", max_size=6), max_size=8), st.lists(st.text(alphabet="abST", min_size=1, max_size=3), min_size=1, max_size=3))
def test_scanning_pieces_is_scanning_the_whole_text(pieces, stops):
    scanner = StopScanner(stops)
    out = "".join(scanner.feed(piece) for piece in pieces)
    whole = "".join(pieces)
    if scanner.matched:
        # Cut just before a stop sequence, as soon as one was complete: none lies in the text sent.
        assert any(whole.startswith(out + stop) for stop in stops)
        assert not any(stop in out for stop in stops)
    else:
        assert not any(stop in whole for stop in stops) and out + scanner.flush() == whole
    assert scanner.feed("more") == "" or not scanner.matched


def test_cached_prompt_tokens_go_where_openai_clients_read_them() -> None:
    from sse import openai_usage

    usage = {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35, "cached_tokens": 16}
    assert openai_usage(usage) == {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35,
                                   "prompt_tokens_details": {"cached_tokens": 16}}
    assert "prompt_tokens_details" not in openai_usage({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})
