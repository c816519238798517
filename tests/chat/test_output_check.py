"""The JSON-mode answer check (chat.output.check) as the Reframer drives it: the verdict on
an answer never depends on how the stream was cut into chunks."""

from __future__ import annotations

import json
import random

from hypothesis import given
from hypothesis import strategies as st

from chat.output import check
from chat.output.check import JsonAnswerCheck, answer_check
from chat.turn import OutputFormat
from sse import Reframer
from tests.sse.support import protocol_events, splits

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["name", "tags"],
    "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "integer"}}},
}
STRICT = OutputFormat(kind="json_schema", name="thing", schema=SCHEMA, strict=True)
LOOSE = OutputFormat(kind="json_schema", name="thing", schema=SCHEMA)
OBJECT = OutputFormat(kind="json_object")


def native(text: str, pieces: int, seed: int) -> str:
    # The answer in `pieces` frames, as a model streams it, then [DONE].
    cuts = sorted(random.Random(seed).sample(range(1, len(text)), min(pieces, len(text)) - 1)) if len(text) > 1 else []
    parts = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return "".join(f"data: {json.dumps({'response': part})}\n\n" for part in parts) + "data: [DONE]\n\n"


def ending(output: OutputFormat, upstream: str, seed: int) -> str:
    reframer = Reframer(request_id="r", model="m", answer_check=answer_check(output), rng=random.Random(1))
    out = "".join(reframer.feed(chunk) for chunk in splits(upstream, seed)) + reframer.finish()
    name, data = protocol_events(out)[-1]
    return "done" if name == "done" else data["code"]


def verdict(output: OutputFormat, text: str) -> str | None:
    judged = JsonAnswerCheck(output)
    judged.feed(text)
    return judged.verdict()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
ANSWERS = st.one_of(
    JSON_VALUES.map(json.dumps),
    st.builds(lambda name, tags: json.dumps({"name": name, "tags": tags}), st.text(max_size=10), st.lists(st.integers(), max_size=4)),
    st.text(max_size=40),  # mostly not JSON
)


@given(answer=ANSWERS, pieces=st.integers(1, 12), seed=st.integers(0, 10_000), output=st.sampled_from([STRICT, LOOSE, OBJECT]))
def test_the_verdict_is_the_same_however_the_answer_was_streamed(answer, pieces, seed, output):
    expected = verdict(output, answer) or "done"
    assert ending(output, native(answer, pieces, seed), seed) == expected


def test_each_format_asks_what_it_should():
    assert verdict(STRICT, '{"name": "a", "tags": [1]}') is None
    assert verdict(STRICT, '{"name": "a", "tags": ["1"]}') == "output_schema_mismatch"
    assert verdict(LOOSE, '{"name": 1}') is None, "a schema without strict is a hint"
    assert verdict(LOOSE, "[1, 2]") is None, "any JSON, for a loose schema"
    assert verdict(OBJECT, "[1, 2]") == "output_not_json", "json_object asks for an object"
    assert verdict(OBJECT, ' \n{"a": 1}\t') is None, "whitespace around it is JSON's own"
    assert verdict(OBJECT, '```json\n{"a": 1}\n```') == "output_not_json", "a fenced answer is not bare JSON"
    assert answer_check(None) is None and answer_check(OutputFormat(kind="text")) is None


def test_an_answer_past_the_bound_is_too_large_to_check_and_kept_no_longer(monkeypatch):
    monkeypatch.setattr(check, "MAX_CHECKED_CHARS", 10)
    judged = JsonAnswerCheck(OBJECT)
    judged.feed('{"a": ')
    judged.feed('"0123456789"}')
    assert judged.verdict() == "output_too_large" and judged.violation == "over 10 characters"


def test_the_violation_says_where_without_the_answers_values():
    judged = JsonAnswerCheck(STRICT)
    judged.feed('{"name": "secret words", "tags": ["x"]}')
    assert judged.verdict() == "output_schema_mismatch"
    assert judged.violation is not None and "secret" not in judged.violation and "tags" in judged.violation
