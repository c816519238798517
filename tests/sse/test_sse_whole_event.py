"""Reframer.feed_whole_event, the fast path for one whole event of model text: trying it
first and feeding whatever it refuses must give what `feed` alone gives (the same frames,
to the character but for how an escaped OpenAI-style text is spelled, and the same counts,
usage and ending), and it must take the commonest frames of a live stream."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse import (
    Encoder,
    NDJSONEncoder,
    OpenAIChunkEncoder,
    OpenAICompletionEncoder,
    Reframer,
    SSEEncoder,
    UIMessageStreamEncoder,
)
from sse._jsonstr import scan_body
from tests.sse.support import native_event, openai_event, sent, stats

ENCODINGS: dict[str, Callable[[], Encoder]] = {
    "sse": SSEEncoder,
    "ndjson": NDJSONEncoder,
    "openai": lambda: OpenAIChunkEncoder(created=1, include_usage=True),
    "openai-collected": lambda: OpenAICompletionEncoder(created=1),
    "ui": UIMessageStreamEncoder,
}
# Encoders that write a body copied through still escaped: their frame of an escaped
# text is spelled differently from the one `delta` writes, though it reads the same.
COPYING = {"sse", "ndjson", "openai"}
USAGE = ',"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}'


def frames_of(output: str, encoding: str) -> list[Any]:
    """The frames of `output` with their JSON read: two spellings of one value are equal."""
    if encoding == "ndjson":
        assert output == "" or output.endswith("\n")
        return [json.loads(line) for line in output.split("\n")[:-1]]
    if encoding == "openai-collected":
        return [json.loads(output)] if output else []
    assert output == "" or output.endswith("\n\n")
    frames: list[Any] = []
    for block in output.split("\n\n")[:-1]:
        if block.startswith(":"):
            frames.append("ping")
            continue
        *head, data_line = block.split("\n")
        assert data_line.startswith("data: ") and len(head) <= 1
        data = data_line[len("data: ") :]
        frames.append((head[0] if head else "", data if data == "[DONE]" else json.loads(data)))
    return frames


def make(encoding: str, seed: int = 1, **options: Any) -> Reframer:
    return Reframer(request_id="r", model="m", encoder=ENCODINGS[encoding](), rng=random.Random(seed), **options)


def started(encoding: str = "sse", **options: Any) -> Reframer:
    """A Reframer past its first event (the stream's start, where a BOM may come, is
    always read the general way)."""
    reframer = make(encoding, **options)
    reframer.start()
    reframer.feed(": first\n\n")
    return reframer


# --- strategies -------------------------------------------------------------------------

# Pieces of a JSON string body: escapes of every kind (lone surrogates included), and
# plain characters (raw non-ASCII, U+2028) that JSON allows unescaped.
BODY_PIECES = st.sampled_from(
    ["a", " ", "Hi", "\\n", '\\"', "\\\\", "\\/", "\\t", "\\u00e9", "\\u00E9", "\\ud800", "\\uDFFF", "\\ud83d\\ude42",
     "\\u0000", "\\u2028", "\u2028", "\u00e9", "\u6771", "\U0001f642", "\x7f"]
) | st.text(st.characters(exclude_characters='"\\', exclude_categories=("Cs", "Cc")), min_size=1, max_size=4)
BODIES = st.lists(BODY_PIECES, max_size=5).map("".join)  # "" included: it sends nothing
COUNT = st.integers(0, 99) | st.sampled_from([999_999_999_999_999, 10**15, 2**53 - 1, 2**53])
USAGES = st.one_of(
    st.just(""),
    st.just(',"usage":null'),
    st.builds(lambda p, c, t: f',"usage":{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t}}}', COUNT, COUNT, COUNT),
    st.builds(lambda p, c, t: f',"usage":{{"prompt_tokens":{p},"total_tokens":{t},"completion_tokens":{c}}}', COUNT, COUNT, COUNT),
    st.builds(
        lambda p, c, t, cached: (f',"usage":{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t},'
                                 f'"prompt_tokens_details":{{"cached_tokens":{cached}}}}}'),
        COUNT, COUNT, COUNT, COUNT,
    ),
    st.just(',"usage": {"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}'),  # spaced: the general way
)
FIELDS = st.sampled_from(["content", "content", "reasoning_content", "reasoning"])
TOOL_START = openai_event("", usage="").replace(
    '"delta":{"content":""}',
    '"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\\"a\\":"}}]}',
)
TOOL_FRAGMENT = openai_event("", usage="").replace(
    '"delta":{"content":""}', '"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}'
)
OTHER_EVENTS = st.sampled_from(
    [
        "data: [DONE]\n\n",
        ": keep-alive\n\n",
        "\n",
        "\ufeff",
        'data: {"response": "spaced"}\n\n',
        'data: {"response":"a","p":"x\\"y"}\n\n',  # an escape in the padding
        'data: {"response":"bad \\x escape"}\n\n',
        'data: {"response":"","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}\n\n',
        'data: {"response":"","tool_calls":[{"name":"f","arguments":{"a":1}}]}\n\n',
        'event: error\ndata: {"response":"x"}\n\n',
        'data: {"response":"crlf"}\r\n\r\n',
        'data: {"response":"cr"}\r',
        'data: {"response":"no blank line"}\n',
        'data: {"response":"one"}\n\ndata: {"response":"two"}\n\n',
        'data: {"response":"extra blank line"}\n\n\n',
        openai_event("role").replace('"delta":{"content":"role"}', '"delta":{"role":"assistant","content":""}'),
        openai_event("").replace('"finish_reason":null', '"finish_reason":"stop"'),
        'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],' + USAGE[1:] + "}\n\n",
        openai_event("x").replace('"id":"chatcmpl-1"', '"id":"a\\"b"'),
        openai_event("x").replace('"content":"x"', '"content":null'),
        TOOL_START,
        TOOL_FRAGMENT,
    ]
)
# A stream's chunks share their head (id, created, model) but for the odd change.
HEADS = st.sampled_from([{}, {}, {}, {"id": "chatcmpl-2"}, {"id": ""}, {"id": "id \u00e9"}, {"model": "m.2"}, {"created": 0}])
MODEL_TEXT = st.one_of(
    st.builds(native_event, BODIES, st.none() | st.sampled_from(["", "abc", "Zz09"])),
    st.builds(lambda body, field, usage, head: openai_event(body, field, usage, **head), BODIES, FIELDS, USAGES, HEADS),
    st.builds(lambda body, field, usage, head: openai_event(body, field, usage, **head), BODIES, FIELDS, USAGES, HEADS),
)
# Mostly model text, as in a live stream, between everything else an upstream sends.
EVENTS = st.one_of(MODEL_TEXT, MODEL_TEXT, MODEL_TEXT, OTHER_EVENTS)


@st.composite
def upstreams(draw: st.DrawFn) -> list[str]:
    """Texts as a runtime hands them over: mostly one whole event each, sometimes an
    event cut in two or two events in one text."""
    chunks: list[str] = []
    for event in draw(st.lists(EVENTS, min_size=2, max_size=16)):
        how = draw(st.sampled_from(["whole", "whole", "whole", "whole", "cut", "joined"]))
        if how == "cut" and len(event) > 1:
            at = draw(st.integers(1, len(event) - 1))
            chunks += [event[:at], event[at:]]
        elif how == "joined" and chunks:
            chunks[-1] += event
        else:
            chunks.append(event)
    return chunks


def reframe(reframer: Reframer, chunks: list[str], *, whole_events_first: bool) -> tuple[list[str], list[Any]]:
    """Every piece of output, and what the Reframer reports after each text, fed as the
    stream lifecycle feeds it (the fast path first, if asked; `done` once `[DONE]` came)."""
    pieces = [reframer.start()]
    trace: list[Any] = []
    for chunk in chunks:
        out = reframer.feed_whole_event(chunk) if whole_events_first else None
        if out is None:
            out = reframer.feed(chunk)
            if reframer.saw_done and not reframer.terminated:
                out += reframer.finish()
        pieces.append(out)
        trace.append((reframer.deltas, reframer.model_events, reframer.saw_done, reframer.terminated))
    pieces.append(reframer.finish())
    trace.append((reframer.stats, reframer.last_error_code))
    return pieces, trace


def spelled_alike(chunks: list[str], encoding: str) -> bool:
    """Whether the two ways must agree to the character: they may differ in spelling only
    where a copying encoder copies an escaped OpenAI-style text through."""
    return encoding not in COPYING or not any(chunk.startswith('data: {"id":') and "\\" in chunk for chunk in chunks)


def assert_both_ways_agree(chunks: list[str], encoding: str, seed: int, **options: Any) -> None:
    fast, fast_trace = reframe(make(encoding, seed, **options), chunks, whole_events_first=True)
    general, general_trace = reframe(make(encoding, seed, **options), chunks, whole_events_first=False)
    for piece in fast:
        sent(piece)  # never a lone surrogate
    assert [frames_of(piece, encoding) for piece in fast] == [frames_of(piece, encoding) for piece in general]
    if spelled_alike(chunks, encoding):
        assert fast == general
    # The same counts after every text, and the same stats, usage and ending at the end.
    assert fast_trace == general_trace


@given(
    upstreams(),
    st.sampled_from(sorted(ENCODINGS)),
    st.sampled_from([()] * 4 + [("STOP",), ("a",)]),
    # (max_line_bytes, max_event_chars): the defaults mostly, and caps events pass.
    st.sampled_from([(1 << 18, 1 << 18)] * 3 + [(64, 1 << 18), (1 << 18, 40)]),
    st.integers(0, 2**32 - 1),
)
def test_trying_the_whole_event_first_gives_what_feed_alone_gives(
    chunks: list[str], encoding: str, stop: tuple[str, ...], caps: tuple[int, int], seed: int
) -> None:
    assert_both_ways_agree(chunks, encoding, seed, stop=stop, max_line_bytes=caps[0], max_event_chars=caps[1])


@given(
    st.lists(MODEL_TEXT | st.just(": keep-alive\n\n"), min_size=2, max_size=30).map(lambda events: [*events, "data: [DONE]\n\n"]),
    st.sampled_from(sorted(ENCODINGS)),
    st.integers(0, 2**32 - 1),
)
def test_a_stream_of_whole_model_text_events_reads_the_same_both_ways(chunks: list[str], encoding: str, seed: int) -> None:
    # Nearly every text here takes the fast path: its text, usage and counts are checked.
    assert_both_ways_agree(chunks, encoding, seed)


@given(upstreams(), st.sampled_from(sorted(ENCODINGS)), st.sampled_from(["native", "openai"]), st.integers(0, 2**32 - 1))
def test_the_catalogs_framing_only_orders_the_fast_paths(chunks: list[str], encoding: str, framing: str, seed: int) -> None:
    # A model the catalog says streams one framing may stream the other (or anything):
    # the same output and counts as with no word on it.
    hinted = reframe(make(encoding, seed, framing=framing), chunks, whole_events_first=True)
    assert hinted == reframe(make(encoding, seed), chunks, whole_events_first=True)


# --- when the fast path reads, and when it leaves the text to `feed` ---------------------


def test_a_workers_ai_stream_takes_the_fast_path_for_every_text_after_the_first_event() -> None:
    tokens = [f"tok{n} " for n in range(19)] + ['caf\\u00e9 \\"q\\"']  # bodies: an escape counts as one
    upstream = [
        openai_event("role").replace('"delta":{"content":"role"}', '"delta":{"role":"assistant","content":""}'),
        openai_event("Let me think", "reasoning_content", ',"usage":null'),
        openai_event("...", "reasoning", USAGE),
        *[openai_event(token, usage=USAGE) for token in tokens],
        native_event("native", "ab"),
        openai_event("").replace('"finish_reason":null', '"finish_reason":"stop"'),
        "data: [DONE]\n\n",
    ]
    reframer = make("sse")
    reframer.start()
    taken = []
    for chunk in upstream:
        out = reframer.feed_whole_event(chunk)
        taken.append(out is not None)
        if out is None:
            reframer.feed(chunk)
    # Not the role chunk (the first), nor the finish reason, nor [DONE].
    assert taken == [False, True, True, *[True] * len(tokens), True, False, False]
    done = reframer.finish()
    [(kind, data)] = frames_of(done, "sse")
    assert kind == "event: done" and data["usage"] == json.loads(USAGE[len(',"usage":') :])
    chars = sum(len(json.loads(f'"{token}"')) for token in tokens) + len("native")
    assert (data["chunks"], data["chars"], data["finish_reason"]) == (21, chars, "stop")
    assert (reframer.stats.reasoning_deltas, reframer.stats.reasoning_chars) == (2, len("Let me think..."))


def test_a_stream_whose_chunks_change_their_head_still_takes_the_fast_path() -> None:
    # Heads other than the one before (more of them than the normalizer learns) are
    # matched in full again: the same verdict, whatever was learned.
    heads = [{}, {"id": "chatcmpl-2"}, {"model": "other"}, {"created": 5}, {"id": "x", "model": "y"}, {}]
    reframer = started()
    taken = [reframer.feed_whole_event(openai_event(f"t{n}", **head)) is not None for head in heads for n in range(3)]
    assert all(taken) and reframer.stats.deltas == len(taken)
    assert reframer.feed_whole_event(openai_event("x", id='a\\"b')) is None, "an escape in the id: the general way"


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize(
    "event",
    [
        pytest.param(openai_event("Hi"), id="openai-content"),
        pytest.param(openai_event("hmm", "reasoning_content"), id="openai-reasoning-content"),
        pytest.param(openai_event("hmm", "reasoning"), id="openai-reasoning"),
        pytest.param(openai_event("Hi", usage=',"usage":null'), id="openai-usage-null"),
        pytest.param(openai_event("Hi", usage=USAGE), id="openai-usage"),
        pytest.param(openai_event("caf\\u00e9 \\\"q\\\""), id="openai-escapes"),
        pytest.param(native_event("Hi"), id="native"),
        pytest.param(native_event("Hi", "abc"), id="native-padded"),
    ],
)
def test_the_commonest_frames_take_the_fast_path(encoding: str, event: str) -> None:
    reframer = started(encoding)
    before = reframer.model_events
    assert reframer.feed_whole_event(event) is not None
    assert reframer.model_events == before + 1


def test_at_the_streams_start_the_text_goes_to_feed_where_a_bom_is_dropped() -> None:
    reframer = make("sse")
    reframer.start()
    assert reframer.feed_whole_event(openai_event("Hi")) is None, "nothing fed yet"
    reframer.feed("\ufeff" + native_event("Hi"))
    assert reframer.feed_whole_event(native_event("more")) is not None
    assert reframer.stats.deltas == 2


def preamble(reframer: Reframer, kind: str) -> None:
    """Brings a started Reframer into a state where the next text is not between events,
    or not plain model text."""
    if kind == "partial-event":
        reframer.feed('data: {"response":"a')
    elif kind == "partial-line-end":
        reframer.feed(native_event("a")[:-1])
    elif kind == "cr-at-the-end":
        reframer.feed('data: {"response":"a"}\r\r')  # an LF may follow: it is no event start
    elif kind == "tool-call-open":
        reframer.feed(TOOL_START)
    elif kind == "after-done":
        reframer.feed("data: [DONE]\n\n")
    elif kind == "after-the-end":
        reframer.fail("upstream_timeout")
    elif kind == "held-text-after-a-whole-event":
        reframer.feed(native_event("a") + "data: ")


@pytest.mark.parametrize(
    "kind",
    ["partial-event", "partial-line-end", "cr-at-the-end", "tool-call-open", "after-done", "after-the-end",
     "held-text-after-a-whole-event"],
)
@pytest.mark.parametrize("event", [openai_event("Hi"), native_event("Hi"), openai_event("hmm", "reasoning")])
def test_the_fast_path_reads_nothing_unless_the_text_is_a_whole_event_between_events(kind: str, event: str) -> None:
    tried, fed = started(), started()
    for reframer in (tried, fed):
        preamble(reframer, kind)
    assert tried.feed_whole_event(event) is None
    # Nothing was read: the same text through `feed` does to both what it does to one.
    assert tried.feed(event) == fed.feed(event)
    assert tried.stats == fed.stats
    assert tried.finish() == fed.finish()


def test_a_text_after_a_tool_call_goes_to_feed_which_completes_the_call_and_then_the_fast_path_reads_again() -> None:
    reframer = started()
    reframer.feed(TOOL_START)
    assert reframer.feed_whole_event(openai_event("Now")) is None
    out = reframer.feed(openai_event("Now"))
    assert sorted(kind for kind, _ in frames_of(out, "sse")) == ["event: delta", "event: tool_call"]
    assert reframer.feed_whole_event(openai_event(" more")) is not None


@pytest.mark.parametrize("event", [openai_event("Hi"), native_event("Hi")])
def test_with_stop_sequences_every_text_goes_to_feed_to_be_scanned(event: str) -> None:
    reframer = started(stop=("STOP",))
    for _ in range(3):
        assert reframer.feed_whole_event(event) is None
        reframer.feed(event)
    assert reframer.feed_whole_event(event.replace("Hi", "STOP")) is None


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(openai_event(""), id="empty-text"),
        pytest.param(openai_event("x").replace('"finish_reason":null', '"finish_reason":"stop"'), id="finish-reason"),
        pytest.param(openai_event("x").replace('"content":"x"', '"content":null'), id="null-content"),
        pytest.param(openai_event("x", usage=',"usage":{"prompt_tokens":1}'), id="usage-other-shape"),
        pytest.param(openai_event("x", usage=',"usage":{"prompt_tokens":9007199254740991,"completion_tokens":1,'
                                             '"total_tokens":1}'), id="count-of-16-digits"),
        pytest.param(openai_event("x").replace('"id":"chatcmpl-1"', '"id":"a\\"b"'), id="escaped-id"),
        pytest.param(openai_event("bad \\x escape"), id="invalid-escape"),
        pytest.param(openai_event("x")[:-1], id="no-blank-line"),
        pytest.param(openai_event("x") + "\n", id="extra-blank-line"),
        pytest.param(openai_event("x") + openai_event("y"), id="two-events"),
        pytest.param(openai_event("x").replace("\n\n", "\r\n\r\n"), id="crlf"),
        pytest.param(native_event(""), id="native-empty-text"),
        pytest.param('data: {"response": "x"}\n\n', id="native-spaced"),
        pytest.param('data: {"response":"x","usage":null}\n\n', id="native-with-usage"),
        pytest.param(native_event("x", 'a\\"b'), id="native-escaped-padding"),
        pytest.param("data: [DONE]\n\n", id="done"),
        pytest.param(": keep-alive\n\n", id="keep-alive"),
        pytest.param(TOOL_START, id="tool-call"),
        pytest.param("event: delta\n" + native_event("x"), id="named-event"),
    ],
)
def test_any_other_text_is_left_to_feed_untouched(text: str) -> None:
    tried, fed = started(), started()
    assert tried.feed_whole_event(text) is None
    assert tried.feed(text) == fed.feed(text)
    assert tried.stats == fed.stats
    assert tried.finish() == fed.finish()


@pytest.mark.parametrize("caps", [{"max_line_bytes": 64}, {"max_event_chars": 40}], ids=["line-cap", "event-cap"])
@pytest.mark.parametrize("event", [openai_event("Hi"), native_event("x" * 80)], ids=["openai", "native"])
def test_a_whole_event_over_a_cap_ends_the_stream_as_feed_does(caps: dict[str, int], event: str) -> None:
    tried, fed = started(**caps), started(**caps)
    out = tried.feed_whole_event(event)
    if out is None:
        out = tried.feed(event)
    assert out == fed.feed(event)
    assert tried.last_error_code == "upstream_malformed" and tried.terminated


# --- what the fast path writes ------------------------------------------------------------


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("whole_event_first", [True, False], ids=["fast-path", "general-path"])
@pytest.mark.parametrize(
    "event",
    [
        pytest.param(native_event("x\\ud800"), id="native"),
        pytest.param(native_event("x\\ud800", "ab"), id="native-padded"),
        pytest.param(openai_event("x\\ud800"), id="openai-content"),
        pytest.param(openai_event("x\\ud800", "reasoning_content"), id="openai-reasoning"),
        pytest.param(openai_event("x\\ud800", usage=',"usage":null'), id="openai-usage-null"),
    ],
)
def test_a_lone_surrogate_escape_upstream_never_reaches_the_output_as_a_lone_surrogate(
    encoding: str, whole_event_first: bool, event: str
) -> None:
    reframer = started(encoding)
    out = reframer.feed_whole_event(event) if whole_event_first else None
    assert (out is not None) == whole_event_first
    pieces = [out if out is not None else reframer.feed(event), reframer.feed("data: [DONE]\n\n"), reframer.finish()]
    for piece in pieces:
        sent(piece)  # raises on a lone surrogate
    output = "".join(pieces)
    if encoding == "openai-collected":
        message = json.loads(output)["choices"][0]["message"]
        assert "x\ud800" in (message["content"], message.get("reasoning_content"))
    else:
        texts = [json.dumps(frame) for frame in frames_of(output, encoding)]
        assert any('"x\\ud800"' in text for text in texts)


OPERATIONS = st.lists(st.tuples(st.sampled_from(["delta", "reasoning"]), BODIES, st.sampled_from(["", "ab", "Zz09"])), max_size=6)


@given(OPERATIONS, st.sampled_from(sorted(ENCODINGS)))
def test_json_delta_and_json_reasoning_write_what_delta_and_reasoning_write_for_the_decoded_text(
    operations: list[tuple[str, str, str]], encoding: str
) -> None:
    copied, decoded = ENCODINGS[encoding](), ENCODINGS[encoding]()
    for encoder in (copied, decoded):
        encoder.meta(request_id="r", model="m")
    for kind, body, padding in operations:
        written = getattr(copied, f"json_{kind}")(body, padding)
        expected = getattr(decoded, kind)(scan_body(body), padding)
        assert frames_of(written, encoding) == frames_of(expected, encoding), (kind, body)
        if encoding in COPYING:
            sent(written)  # copied escapes are ASCII: sendable as they are
        if encoding not in COPYING or "\\" not in body:
            assert written == expected, (kind, body)
    ending = stats(deltas=1, chars=1, finish_reason="stop")
    assert copied.done(ending) == decoded.done(ending)
