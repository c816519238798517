"""The Reframer's answer check: what the client is sent is what the check sees, and a
rejected answer ends with the check's code instead of `done`, unless it was cut short or
ended for tool calls."""

from __future__ import annotations

import random

import pytest

from sse import Reframer
from tests.sse.support import protocol_events, run_reframer, text_and_bytes, without_padding
from tests.sse.test_sse_reframer import MODEL, USAGE, native, openai


class Recording:
    """Records what it is fed; rejects with `code` (None: accepts)."""

    def __init__(self, code: str | None = None, *, tools_offered: bool = True) -> None:
        self.code = code
        self.tools_offered = tools_offered
        self.pieces: list[str] = []
        self.asked = 0

    def feed(self, text: str) -> None:
        self.pieces.append(text)

    def verdict(self) -> str | None:
        self.asked += 1
        return self.code


def run(upstream: str, check: Recording, chunks: list[str] | None = None, **kwargs: object) -> list[tuple[str, dict]]:
    def make() -> Reframer:
        return Reframer(request_id="req-1", model=MODEL, rng=random.Random(7), answer_check=check, **kwargs)  # type: ignore[arg-type]

    return without_padding(protocol_events(run_reframer(make, chunks or [upstream])))


def test_the_check_sees_exactly_the_text_sent_however_the_stream_is_split() -> None:
    texts = ('{"a": ', '"\u00e9\U0001f642 \\u00e9"', ', "b": [1, 2]}')  # the last escape is the model's own text
    upstream = native(*texts)
    for how, chunks in text_and_bytes(upstream):
        check = Recording()
        events = run(upstream, check, list(chunks))  # type: ignore[arg-type]
        sent = "".join(data["text"] for name, data in events if name == "delta")
        assert "".join(check.pieces) == sent == "".join(texts), how
        assert events[-1][0] == "done" and check.asked == 1, how


def test_a_rejected_answer_ends_with_the_checks_code_and_never_done() -> None:
    check = Recording("output_not_json")
    events = run(openai({"content": "Sure! Here is"}, {"content": " the JSON"}), check)
    assert [name for name, _ in events] == ["meta", "delta", "delta", "error"]
    assert events[-1][1]["code"] == "output_not_json"


@pytest.mark.parametrize("finish", ["length", "content_filter"])
def test_a_cut_answer_is_reported_as_the_cut_it_is_not_judged(finish: str) -> None:
    check = Recording("output_schema_mismatch")
    events = run(openai({"content": '{"a": '}, finish=finish), check)
    assert events[-1] == ("done", {"finish_reason": finish, "usage": USAGE, "chunks": 1, "chars": 6, "skipped": 0})
    assert check.asked == 0


def test_an_answer_whose_budget_ran_out_without_a_finish_reason_is_a_cut_not_judged() -> None:
    check = Recording("output_not_json")
    events = run(native('{"a": ', '"b'), check, max_tokens=USAGE["completion_tokens"])
    assert events[-1][0] == "done" and events[-1][1]["finish_reason"] == "length" and check.asked == 0


def test_text_before_a_stop_sequence_is_what_is_judged() -> None:
    check = Recording()
    events = run(native('{"a": 1}', "END and more"), check, stop=("END",))
    assert "".join(check.pieces) == '{"a": 1}' and events[-1][0] == "done" and check.asked == 1


def test_text_held_for_a_stop_sequence_that_never_came_is_judged_too() -> None:
    check = Recording()
    run(native('{"a": 1', "}E"), check, stop=("END",))
    assert "".join(check.pieces) == '{"a": 1}E'


def test_an_upstream_that_ends_early_is_incomplete_whatever_the_check_says() -> None:
    check = Recording()
    events = run(native('{"a": 1}', done=False), check)
    assert events[-1][1]["code"] == "upstream_incomplete" and check.asked == 0


def test_a_finish_reason_of_tool_calls_without_any_call_is_judged_as_any_answer() -> None:
    check = Recording("output_not_json")
    events = run(openai({"content": "not json"}, finish="tool_calls"), check)
    assert events[-1][0] == "error" and events[-1][1]["code"] == "output_not_json" and check.asked == 1


def test_an_answer_that_called_a_tool_nobody_offered_is_judged() -> None:
    check = Recording("output_not_json", tools_offered=False)
    call = {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    events = run(openai({"content": "prose"}, call, finish="tool_calls"), check)  # type: ignore[arg-type]
    assert events[-1][0] == "error" and events[-1][1]["code"] == "output_not_json" and check.asked == 1
    offered = Recording("output_not_json", tools_offered=True)
    assert run(openai({"content": "prose"}, call, finish="tool_calls"), offered)[-1][0] == "done", "offered: its answer is to come"  # type: ignore[arg-type]
