"""The CLI's readers on their own (no I/O): the same events however the bytes are split,
per the WHATWG event-stream rules; what the protocol's events print; how an answer's
ending becomes its status line and exit code; what reaches a terminal; the --tools and
--history files; --image files, checked before anything is sent, and which images a
request re-sends from the history."""

from __future__ import annotations

import asyncio
import io
import json
import random
import re
from collections.abc import AsyncIterator

import pytest

from clients import chat_cli
from clients.chat_cli import (
    AnswerWriter,
    Deadline,
    Event,
    HistoryError,
    Outcome,
    ProtocolReader,
    RawReader,
    read_answer,
    read_history,
    read_images,
    read_tools,
    sendable,
    user_message,
    visible,
)
from tests.image_files import data_url, gif, png, png_header_only

BODY = (
    "event: meta\r\ndata: {\"request_id\":\"r\",\"model\":\"@cf/zai-org/glm-4.7-flash\"}\r\n\r\n"
    ": ping\n\n"
    "event: reasoning\rdata: {\"text\":\"Hmm.\"}\r\r"
    "event: delta\rdata: {\"text\":\"Grüße 🚀\"}\r\r"
    "event: delta\ndata: {\"text\":\"a\u2028b\"}\n\n"
    "event: done\ndata:{\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}\n\n"
    "event: delta\ndata: {\"text\":\"unfinished"
).encode()


def split_whole(body: bytes) -> list[bytes]:
    return [body]


def split_bytes(body: bytes) -> list[bytes]:
    return [body[i:i + 1] for i in range(len(body))]


def split_randomly(body: bytes) -> list[bytes]:
    rng = random.Random(7)
    cuts = sorted(rng.sample(range(1, len(body)), 25))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=False)]


def read_body(pieces: list[bytes], out: io.StringIO, reader: ProtocolReader | RawReader | None = None) -> Outcome:
    async def chunks() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    return asyncio.run(read_answer(chunks(), reader or ProtocolReader(), Deadline(None), AnswerWriter(out), None))


@pytest.mark.parametrize("split", [split_whole, split_bytes, split_randomly], ids=["whole", "byte-by-byte", "random"])
def test_the_answer_is_the_same_however_the_bytes_are_split(split):
    # The CLI reads events with the project's own parser (src/sse): CR, LF and CRLF end
    # lines, never U+2028; a comment is no event; nothing after the terminal is read.
    out = io.StringIO()
    outcome = read_body(split(BODY), out)
    assert out.getvalue() == "Grüße 🚀a\u2028b", "reasoning is not the answer"
    assert outcome.status_line == "complete chunks=2 chars=10 model=@cf/zai-org/glm-4.7-flash tokens=9+4 finish=stop"


@pytest.mark.parametrize("line", [b"data: " + b"x" * (chat_cli.MAX_LINE_CHARS + 1), b"data: x\n" * (chat_cli.MAX_LINE_CHARS // 8 + 1)],
                         ids=["a-line", "an-event"])
def test_a_line_or_an_event_over_the_cap_is_a_malformed_stream(line):
    outcome = read_body([b"event: delta\n", line], io.StringIO())
    assert outcome.status_line == "stream_error: malformed_stream"


@pytest.mark.parametrize("body", [
    b"event: delta\ndata: " + b"[" * 100_000 + b"\n\n",
    b"event: delta\ndata: {\"text\":\"Hi\"}\n\nevent: done\ndata: {\"usage\": " + b"[" * 100_000 + b"}\n\n",
], ids=["an-event", "the-usage-of-done"])
def test_json_nested_deeper_than_python_reads_is_a_malformed_stream_not_a_crash(body):
    outcome = read_body([body], io.StringIO())
    assert (outcome.status_line, outcome.exit_code) == ("stream_error: malformed_stream", 4)


# --- the protocol's events, read into what the CLI prints (no I/O) ------------------------


def protocol_event(type_: str, **data: object) -> Event:
    return Event(type=type_, data=json.dumps(data))


CALL = {"id": "call_1", "name": "current_time", "arguments": '{"timezone":"UTC"}'}  # as printed
EVENT_CALL = {"call_id": "call_1", "name": "current_time", "arguments": '{"timezone":"UTC"}'}  # as the Worker sends it


@pytest.mark.parametrize(("event", "expected"), [
    pytest.param(protocol_event("tool_call", index=0, **EVENT_CALL, input={"timezone": "UTC"}),
                 {**CALL, "input": {"timezone": "UTC"}}, id="whole-call"),
    pytest.param(protocol_event("tool_call", index=1, **{**EVENT_CALL, "arguments": '{"timezone":'}, input=None, input_error="not valid JSON"),
                 {**CALL, "arguments": '{"timezone":', "input": None, "input_error": "not valid JSON"}, id="input-error"),
    pytest.param(protocol_event("tool_call", index=0, **{**EVENT_CALL, "arguments": "[1]"}, input=[1]),
                 {**CALL, "arguments": "[1]", "input": None, "input_error": "not a JSON object"}, id="input-not-an-object"),
    pytest.param(protocol_event("tool_call", index=0, call_id="call_1", name="current_time", input={}), None, id="no-arguments-skipped"),
    pytest.param(protocol_event("tool_call", index=0, **{**EVENT_CALL, "name": 7}, input={}), None, id="name-not-a-string-skipped"),
    pytest.param(protocol_event("tool_call", index=0, **{**CALL}, input={}), None, id="call-id-missing-skipped"),
    pytest.param(protocol_event("tool_call_start", index=0, call_id="call_1", name="current_time", p="xx"), None, id="start-not-printed"),
    pytest.param(protocol_event("tool_call_delta", index=0, arguments='{"time', p="xx"), None, id="fragment-not-printed"),
])
def test_only_a_whole_tool_call_is_printed_and_a_malformed_one_is_skipped(event, expected):
    reader = ProtocolReader()
    reading = reader.take(event)
    assert (reading.text, reading.tool_call, reading.outcome) == ("", expected, None)
    assert reader.tool_calls == (expected is not None)


def test_the_status_line_of_an_answer_with_tool_calls_counts_them():
    reader = ProtocolReader()
    for event in (
        protocol_event("meta", request_id="r", model="m"),
        protocol_event("delta", text="Let me look.", p=""),
        protocol_event("tool_call_start", index=0, call_id="call_1", name="current_time", p=""),
        protocol_event("tool_call", index=0, **EVENT_CALL, input={"timezone": "UTC"}),
    ):
        assert reader.take(event).outcome is None
    done = reader.take(protocol_event("done", finish_reason="tool_calls", tool_calls=1, chunks=1, chars=12))
    assert done.outcome is not None and done.outcome.status_line == "complete chunks=1 chars=12 tool_calls=1 model=m finish=tool_calls"
    assert Outcome(kind="complete", chunks=2, chars=5).status_line == "complete chunks=2 chars=5", "no count without calls"


# --- the --tools file ---------------------------------------------------------------------


TOOL = {"type": "function", "function": {"name": "current_time", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(("content", "expected"), [
    pytest.param(json.dumps([TOOL]), [TOOL], id="a-list"),
    pytest.param(json.dumps({"tools": [TOOL, {"type": "function", "function": {"name": "b"}}]}),
                 [TOOL, {"type": "function", "function": {"name": "b"}}], id="an-object-with-tools"),
])
def test_a_tools_file_is_read_as_given(tmp_path, content, expected):
    path = tmp_path / "tools.json"
    path.write_text(content)
    assert read_tools(path) == expected


@pytest.mark.parametrize(("content", "problem"), [
    pytest.param("[", "Expecting value", id="not-json"),
    pytest.param("[]", "non-empty list", id="empty"),
    pytest.param(json.dumps({"functions": [TOOL]}), "non-empty list", id="no-tools-key"),
    pytest.param(json.dumps([TOOL["function"]]), 'tool 0 needs "type": "function"', id="bare-function"),
    pytest.param(json.dumps([TOOL, {"type": "function", "function": {"name": ""}}]), 'tool 1 needs a "function" with a non-empty', id="empty-name"),
    pytest.param(json.dumps([{"type": "function", "function": {"name": "a", "parameters": "object"}}]), '"parameters" must be', id="parameters-not-an-object"),
])
def test_a_bad_tools_file_says_what_is_wrong(tmp_path, content, problem):
    path = tmp_path / "tools.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=re.escape(problem)):
        read_tools(path)


def test_a_history_keeps_earlier_tool_calls_and_results_as_they_are(tmp_path):
    call = {"id": "call_1", "type": "function", "function": {"name": "current_time", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "Time?"},
        {"role": "assistant", "content": None, "tool_calls": [call], "extra": 1},
        {"role": "tool", "tool_call_id": "call_1", "content": "12:00"},
    ]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(messages))
    assert read_history(path) == [messages[0], {"role": "assistant", "content": None, "tool_calls": [call]}, messages[2]]
    path.write_text(json.dumps([{"role": "assistant", "content": None}]))
    with pytest.raises(ValueError, match="null only with"):
        read_history(path)


def test_a_tool_call_after_text_that_did_not_end_a_line_is_printed_on_a_line_of_its_own():
    body = "".join(f"event: {type_}\ndata: {json.dumps(data)}\n\n" for type_, data in (
        ("delta", {"text": "Let me look."}),
        ("tool_call", {"index": 0, **EVENT_CALL, "input": {"timezone": "UTC"}}),
        ("delta", {"text": "Done.\n"}),
        ("tool_call", {"index": 1, **EVENT_CALL, "call_id": "call_2", "input": {"timezone": "UTC"}}),
        ("done", {"finish_reason": "tool_calls", "tool_calls": 2}),
    )).encode()

    async def chunks() -> AsyncIterator[bytes]:
        yield body

    out = io.StringIO()
    outcome = asyncio.run(read_answer(chunks(), ProtocolReader(), Deadline(None), AnswerWriter(out), None))
    line = json.dumps({"tool_call": {**CALL, "input": {"timezone": "UTC"}}})
    assert out.getvalue() == f"Let me look.\n{line}\nDone.\n{line.replace('call_1', 'call_2')}\n"
    assert outcome.status_line == "complete chunks=2 chars=18 tool_calls=2 finish=tool_calls"


# --- how an answer ended ------------------------------------------------------------------


def ended(reader: ProtocolReader | RawReader, *events: Event) -> Outcome:
    readings = [reader.take(event) for event in events]
    assert all(reading.outcome is None for reading in readings[:-1])
    outcome = readings[-1].outcome
    assert outcome is not None
    return outcome


@pytest.mark.parametrize(("done", "status", "exit_code", "whole"), [
    pytest.param({"finish_reason": "stop", "skipped": 0}, "complete chunks=1 chars=2 finish=stop", 0, True, id="stop"),
    pytest.param({"finish_reason": None}, "complete chunks=1 chars=2", 0, True, id="not-said"),
    pytest.param({}, "complete chunks=1 chars=2", 0, True, id="no-field"),
    pytest.param({"finish_reason": "function_call"}, "complete chunks=1 chars=2 finish=function_call", 0, True, id="function-call"),
    pytest.param({"finish_reason": "length"}, "cut_short: length chunks=1 chars=2", 5, False, id="length"),
    pytest.param({"finish_reason": "content_filter"}, "cut_short: content_filter chunks=1 chars=2", 5, False, id="content-filter"),
    pytest.param({"finish_reason": "other"}, "unknown_ending: other chunks=1 chars=2", 5, False, id="other"),
    pytest.param({"finish_reason": "a_newer_one"}, "unknown_ending: a_newer_one chunks=1 chars=2", 5, False, id="newer-reason-shown"),
    pytest.param({"finish_reason": "\x1b[2K forged"}, "unknown_ending: other chunks=1 chars=2", 5, False, id="odd-reason-not-shown"),
    pytest.param({"finish_reason": 7}, "unknown_ending: other chunks=1 chars=2", 5, False, id="reason-not-a-string"),
    pytest.param({"finish_reason": {"a": 1}}, "unknown_ending: other chunks=1 chars=2", 5, False, id="reason-an-object"),
    # An older Worker's `done` for a failed generation: a failure, never complete.
    pytest.param({"finish_reason": "error"}, "stream_error: generation_failed", 4, False, id="older-worker-error"),
    pytest.param({"finish_reason": "stop", "skipped": 2}, "complete chunks=1 chars=2 skipped=2 finish=stop", 0, True, id="skipped"),
    pytest.param({"finish_reason": "length", "skipped": 1}, "cut_short: length chunks=1 chars=2 skipped=1", 5, False, id="skipped-and-cut"),
    pytest.param({"finish_reason": "stop", "skipped": True}, "complete chunks=1 chars=2 finish=stop", 0, True, id="skipped-not-a-count"),
    pytest.param({"finish_reason": "stop", "skipped": -1}, "complete chunks=1 chars=2 finish=stop", 0, True, id="skipped-negative"),
    pytest.param({"finish_reason": "stop", "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}},
                 "complete chunks=1 chars=2 tokens=12+3 finish=stop", 0, True, id="usage"),
    pytest.param({"finish_reason": "stop", "usage": {"prompt_tokens": "12", "completion_tokens": True}},
                 "complete chunks=1 chars=2 finish=stop", 0, True, id="usage-not-counts"),
])
def test_the_done_event_gives_the_status_line_the_exit_code_and_the_turn_for_history(done, status, exit_code, whole):
    outcome = ended(ProtocolReader(), protocol_event("delta", text="Hi"), protocol_event("done", **done))
    assert (outcome.status_line, outcome.exit_code) == (status, exit_code)
    assert outcome.answer == ({"role": "assistant", "content": "Hi"} if whole else None), "only a whole answer is written"


@pytest.mark.parametrize("done", [{"finish_reason": "stop"}, {"finish_reason": None}, {"finish_reason": "stop", "skipped": 1}])
def test_an_answer_that_ended_whole_with_nothing_in_it_is_empty_not_complete(done):
    outcome = ended(ProtocolReader(), protocol_event("done", **done))
    assert outcome.status_line.startswith("empty chunks=0 chars=0") and outcome.exit_code == 5
    assert outcome.answer is None, "an empty turn is not written to --history"


def test_skipped_frames_are_warned_about_before_the_status_line():
    one = Outcome(kind="complete", chunks=1, chars=2, skipped=1).report()
    assert one == ["warning: 1 frame of the model's output could not be read; the answer may have gaps", "complete chunks=1 chars=2 skipped=1"]
    many = Outcome(kind="cut_short", finish_reason="length", chunks=1, chars=2, skipped=3, resumed=1).report()
    assert many == ["warning: 3 frames of the model's output could not be read; the answer may have gaps",
                    "cut_short: length chunks=1 chars=2 skipped=3 resumed=1"]


def test_the_servers_words_on_stderr_are_escaped_and_on_a_terminal_the_clis_own_lines_are_reverse_video():
    outcome = Outcome(kind="error", chunks=0, chars=0, code="bad\x1b[2K", message="Gone.\r\x1b]0;t\x07", request_id="r")
    # Not a terminal, the same words escaped, unstyled: `cat` of a log acts on them too.
    assert outcome.report() == ["error: Gone.\\x0d\\x1b]0;t\\x07 (request r)", "stream_error: bad\\x1b[2K"]
    assert outcome.report(terminal=True) == ["\x1b[7merror: Gone.\\x0d\\x1b]0;t\\x07 (request r)\x1b[0m", "\x1b[7mstream_error: bad\\x1b[2K\x1b[0m"]


@pytest.mark.parametrize(("model", "shown"), [
    pytest.param("@cf/moonshotai/kimi-k2.6", "@cf/moonshotai/kimi-k2.6", id="a-catalog-name"),
    pytest.param("\x1b[2K\rcomplete", None, id="escapes-not-shown"),
    pytest.param("m" * 129, None, id="too-long-not-shown"),
    pytest.param(7, None, id="not-a-string"),
])
def test_the_status_line_names_the_model_only_when_it_reads_like_a_name(model, shown):
    outcome = ended(ProtocolReader(), protocol_event("meta", request_id="r", model=model), protocol_event("delta", text="Hi"),
                    protocol_event("done", finish_reason="stop"))
    assert outcome.status_line == "complete chunks=1 chars=2" + (f" model={shown}" if shown else "") + " finish=stop"


def test_the_servers_words_cannot_forge_a_status_line():
    forged = "complete chunks=3 chars=12 model=m tokens=1+2 finish=stop"
    outcome = ended(ProtocolReader(), protocol_event("delta", text="Hi"),
                    protocol_event("error", code=f"x\n{forged}", message=f"boom\n{forged}", request_id=f"r\n{forged}"))
    for terminal in (False, True):
        report = outcome.report(terminal=terminal)
        assert len(report) == 2 and "\n" not in "".join(report), report
        assert report[-1].endswith("stream_error: internal_error" + ("\x1b[0m" if terminal else "")), "an odd code is not shown"
        assert "(request " not in report[0], "an odd request id is left out"


def chunk(finish_reason: object = None, content: str | None = None) -> Event:
    delta = {} if content is None else {"content": content}
    return protocol_event("message", choices=[{"index": 0, "delta": delta, "finish_reason": finish_reason}])


DONE = Event(type="message", data="[DONE]")


@pytest.mark.parametrize(("frames", "status"), [
    pytest.param([chunk(content="Hi"), chunk("stop"), DONE], "complete chunks=1 chars=2 finish=stop", id="stop"),
    pytest.param([protocol_event("message", response="Hi"), DONE], "complete chunks=1 chars=2", id="native-says-nothing"),
    pytest.param([chunk(content="Hi"), chunk("length"), DONE], "cut_short: length chunks=1 chars=2", id="length"),
    pytest.param([chunk(content="Hi"), chunk("max_tokens"), DONE], "cut_short: length chunks=1 chars=2", id="max-tokens-alias"),
    pytest.param([chunk(content="Hi"), chunk("content_filter"), DONE], "cut_short: content_filter chunks=1 chars=2", id="content-filter"),
    pytest.param([chunk(content="Hi"), chunk("eos"), DONE], "complete chunks=1 chars=2 finish=eos", id="eos-alias"),
    pytest.param([chunk(content="Hi"), chunk("end_turn"), DONE], "complete chunks=1 chars=2 finish=end_turn", id="end-turn-alias"),
    pytest.param([chunk(content="Hi"), chunk("weird"), DONE], "unknown_ending: weird chunks=1 chars=2", id="unknown"),
    pytest.param([chunk(content="Hi"), chunk("length"), chunk(""), chunk(None), DONE], "cut_short: length chunks=1 chars=2", id="empty-later-reason-keeps-it"),
    pytest.param([chunk(content="Hi"), protocol_event("message", response="", finish_reason="length"), DONE],
                 "cut_short: length chunks=1 chars=2", id="top-level-reason"),
    pytest.param([chunk(content="Hi"), chunk("error"), DONE], "stream_error: generation_failed", id="vllm-error-reason"),
    pytest.param([chunk(content="Hi"), protocol_event("message", error={"message": "provider", "code": 500})],
                 "stream_error: generation_failed", id="in-band-error"),
    pytest.param([chunk(content="Hi"), protocol_event("message", object="error", message="provider")],
                 "stream_error: generation_failed", id="bare-error-body"),
    pytest.param([chunk(content="Hi"), protocol_event("message", response="", error=None), DONE], "complete chunks=1 chars=2", id="null-error-is-none"),
    pytest.param([chunk(content="Hi"), Event(type="message", data="{not json"), Event(type="message", data="[1]"), DONE],
                 "complete chunks=1 chars=2 skipped=2", id="unreadable-frames-skipped"),
    pytest.param([Event(type="message", data="[" * 100_000), chunk(content="Hi"), DONE], "complete chunks=1 chars=2 skipped=1", id="too-deep-skipped"),
])
def test_raw_frames_end_by_their_last_finish_reason(frames, status):
    outcome = ended(RawReader(), *frames)
    assert outcome.status_line == status
    assert "provider" not in " ".join(outcome.report()), "a provider's words are not shown"


# --- what reaches a terminal --------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("\x1b]0;title\x07", "\\x1b]0;title\\x07", id="osc-title"),
    pytest.param("\x1b]52;c;aGk=\x1b\\", "\\x1b]52;c;aGk=\\x1b\\", id="osc-clipboard-st"),
    pytest.param("\x1b[2K\rcomplete", "\\x1b[2K\\x0dcomplete", id="erase-and-return"),
    pytest.param("\x00\x08\x0b\x0c\x0e\x1f", "\\x00\\x08\\x0b\\x0c\\x0e\\x1f", id="c0"),
    pytest.param("a\r\nb", "a\\x0d\nb", id="crlf-keeps-only-the-newline"),
    pytest.param("\x7f", "\\x7f", id="del"),
    pytest.param("\x9b31m \x9d0;t\x9c \x85 \x80 \x9f", "\\x9b31m \\x9d0;t\\x9c \\x85 \\x80 \\x9f", id="c1"),
    pytest.param("\u202a\u202b\u202c\u202d\u202e", "\\u202a\\u202b\\u202c\\u202d\\u202e", id="bidi-embeddings-and-overrides"),
    pytest.param("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069", id="bidi-isolates"),
    pytest.param("tab\there\nnext", "tab\there\nnext", id="tab-and-newline-kept"),
    pytest.param("\u05e9\u05dc\u05d5\u05dd\u200f \u200e \u061c", "\u05e9\u05dc\u05d5\u05dd\u200f \u200e \u061c", id="bidi-marks-kept"),
    pytest.param("caf\u00e9 \u00a0\u00ff \u6771\u4eac \U0001f680 \u2028", "caf\u00e9 \u00a0\u00ff \u6771\u4eac \U0001f680 \u2028", id="printable-kept"),
    pytest.param("\\x1b", "\\x1b", id="the-models-own-backslash-is-text"),
])
def test_what_a_terminal_would_act_on_is_written_visibly_escaped(text, expected):
    assert visible(text) == expected


HOSTILE = "a\x1b]0;t\x07b\x1b[2K\rc\x9b2Jd\u202ee\u2069f\tg\n"


def random_pieces(text: str) -> list[str]:
    cuts = sorted(random.Random(7).sample(range(1, len(text)), 8))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=False)]


@pytest.mark.parametrize("pieces", [
    pytest.param([HOSTILE], id="whole"),
    pytest.param(list(HOSTILE), id="char-by-char"),
    pytest.param([HOSTILE[:2], HOSTILE[2:9], HOSTILE[9:15], HOSTILE[15:]], id="sequences-cut"),
    pytest.param(random_pieces(HOSTILE), id="random"),
])
def test_text_split_across_deltas_is_escaped_the_same_as_whole(pieces):
    assert "".join(pieces) == HOSTILE
    terminal, piped = io.StringIO(), io.StringIO()
    on_terminal, in_a_pipe = AnswerWriter(terminal, terminal=True), AnswerWriter(piped)
    for piece in pieces:
        on_terminal.text(piece)
        in_a_pipe.text(piece)
    assert terminal.getvalue() == "a\\x1b]0;t\\x07b\\x1b[2K\\x0dc\\x9b2Jd\\u202ee\\u2069f\tg\n"
    assert piped.getvalue() == HOSTILE, "not a terminal: the model's text as it came"


def test_a_tool_call_on_a_terminal_is_a_json_line_with_json_escapes_for_what_a_terminal_acts_on():
    call = {"id": "call_1", "name": "note", "arguments": '{"n": "\x1b]0;t\x07 \x9b2J \u202e\x7f"}', "input": {"n": "\x1b]0;t\x07 \x9b2J \u202e\x7f"}}
    terminal, piped = io.StringIO(), io.StringIO()
    AnswerWriter(terminal, terminal=True).tool_call(call)
    AnswerWriter(piped).tool_call(call)
    assert json.loads(terminal.getvalue()) == json.loads(piped.getvalue()) == {"tool_call": call}
    assert "\\u001b]0;t\\u0007 \\u009b2J \\u202e\\u007f" in terminal.getvalue()
    assert visible(terminal.getvalue()) == terminal.getvalue(), "nothing left to act on"
    assert piped.getvalue() == json.dumps({"tool_call": call}, ensure_ascii=False) + "\n"


# --- images: --image files, and what a request re-sends from the history --------------------

MIB = 1024 * 1024


def padded_png(size: int) -> bytes:
    """A 3×2 PNG grown to `size` bytes: the reader reads the header, not what follows."""
    image = png(3, 2)
    return image + b"\0" * (size - len(image))


def test_an_image_is_a_part_after_the_question_with_the_type_its_bytes_show(tmp_path):
    path = tmp_path / "really-a-gif.png"
    path.write_bytes(gif(1, 1))
    assert user_message("What is it?", read_images([path])) == {"role": "user", "content": [
        {"type": "text", "text": "What is it?"},
        {"type": "image_url", "image_url": {"url": data_url(gif(1, 1), "image/gif")}, "filename": "really-a-gif.png"},
    ]}
    assert user_message("Hi", []) == {"role": "user", "content": "Hi"}, "without images the question is text, as before"


IMAGE_REFUSALS = [
    pytest.param({"notes.txt": b"not an image at all"}, "notes.txt: the bytes are not a PNG, JPEG, WebP or GIF image.", id="not-an-image"),
    pytest.param({"cut.png": png(3, 2)[:20]}, "cut.png: the image's header is cut short.", id="truncated-header"),
    pytest.param({"big.png": padded_png(5 * MIB + 1)}, "big.png: an image may be at most 5242880 bytes.", id="over-5-mib"),
    pytest.param({"a.png": padded_png(3 * MIB), "b.png": padded_png(3 * MIB + 1)},
                 "b.png: the request's images total more than 6291456 bytes.", id="over-6-mib-in-all"),
    pytest.param({f"{n}.png": png(1, 1) for n in range(9)}, "8.png: a request may carry at most 8 images.", id="nine-images"),
    pytest.param({"wide.png": png_header_only(8193, 1)}, "wide.png: the image is 8193×1 pixels", id="side-over-8192"),
    pytest.param({"bomb.png": png_header_only(4097, 4096)}, "bomb.png: the image is 4097×4096 pixels", id="over-4096x4096-pixels"),
    pytest.param({}, "missing.png: No such file or directory", id="missing-file"),
]


@pytest.mark.parametrize(("files", "message"), IMAGE_REFUSALS)
def test_an_image_the_worker_would_refuse_is_a_usage_error_naming_the_file_before_anything_is_sent(
    tmp_path, monkeypatch, capsys, files, message,
):
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    names = list(files) or ["missing.png"]

    async def no_request(*args: object, **kwargs: object) -> None:
        raise AssertionError("a request was sent")

    monkeypatch.setattr(chat_cli.command, "ask", no_request)
    argv = ["--url", "http://127.0.0.1:9", *(arg for name in names for arg in ("--image", str(tmp_path / name))), "What is it?"]
    assert chat_cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"chat_cli: --image {tmp_path}/{message}") and err.count("\n") == 1, err


def image(data: bytes, name: str | None) -> dict[str, object]:
    return {"type": "image_url", "image_url": {"url": data_url(data)}, **({"filename": name} if name else {})}


def turn(text: str, *images: dict[str, object]) -> list[dict[str, object]]:
    return [{"role": "user", "content": [{"type": "text", "text": text}, *images]}, {"role": "assistant", "content": "Seen."}]


def sent_images(messages: list[dict[str, object]]) -> list[str]:
    """Each image part of the user messages, oldest first: its URL's start as sent, or the
    placeholder text in its place."""
    return [part["image_url"]["url"][:15] if part["type"] == "image_url" else part["text"]
            for message in messages if isinstance(message["content"], list)
            for part in message["content"] if part["type"] == "image_url" or part["text"].startswith("[image")]


def test_a_request_re_sends_the_newest_images_that_fit_and_names_the_older_ones_in_their_place():
    # Newest first: the question's (tiny), then 2 MiB, 2 MiB (4 MiB in all), then a 2 MiB
    # one past 6 MiB: from there on each older image is a placeholder, the tiny GIF too.
    two_mib = padded_png(2 * MIB)
    history = [
        *turn("First", image(gif(1, 1), None)),  # a hand-written history may name none
        *turn("Second", image(two_mib, "big1.png"), image(two_mib, "big2.png")),
        *turn("Third", image(two_mib, "big3.png"), image(gif(2, 2), "small.gif")),
    ]
    question = user_message("And now?", [image(png(2, 2), "now.png")])
    sent = sendable([*history, question])
    assert sent_images(sent) == [
        "[image not re-sent: image, a 1×1 GIF]",
        "data:image/png;", "[image not re-sent: big2.png, a 3×2 PNG]",
        "data:image/png;", "data:image/gif;",
        "data:image/png;",
    ]
    assert sent[0]["content"][0] == {"type": "text", "text": "First"}, "a message's text stays where it was"
    assert not any("filename" in part for message in sent if isinstance(message["content"], list) for part in message["content"]), \
        "file names stay in the history"
    assert history[2]["content"][2]["filename"] == "big2.png", "the history itself keeps every image"


def test_a_request_re_sends_at_most_eight_images():
    history = turn("Eight", *(image(gif(1, 1), f"{n}.gif") for n in range(8)))
    sent = sendable([*history, user_message("One more", [image(png(3, 2), "new.png")])])
    assert sent_images(sent) == [*(["data:image/gif;"] * 7), "[image not re-sent: 7.gif, a 1×1 GIF]", "data:image/png;"]


def test_a_history_image_the_worker_would_refuse_is_named_by_its_message_and_part(tmp_path):
    path = tmp_path / "history.json"
    path.write_text(json.dumps(turn("Look", {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}})))
    with pytest.raises(HistoryError, match=r"^message 0 part 1: send the image itself as a data URL"):
        sendable([*read_history(path), user_message("And?", [])])
    path.write_text(json.dumps([{"role": "assistant", "content": [{"type": "text", "text": "No"}]}]))
    with pytest.raises(HistoryError, match="a list of parts only in a user message"):
        read_history(path)
