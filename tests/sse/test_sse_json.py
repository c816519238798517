"""Bounded JSON parsing: depth is measured without recursion before json.loads runs."""

from __future__ import annotations

import json

import pytest

from sse import MAX_JSON_DEPTH, JSONDepthError, loads_bounded
from sse._json import nesting_depth


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        pytest.param("1", 0, id="scalar"),
        pytest.param("[]", 1, id="empty-array"),
        pytest.param('{"a":[{"b":[]}]}', 4, id="mixed"),
        pytest.param("[[],[[]],[]]", 3, id="siblings-do-not-add-up"),
        pytest.param('["[[[[", "{{{{"]', 1, id="brackets-in-strings-do-not-count"),
        pytest.param(r'["\"[[[[", "\\", "]]]"]', 1, id="escaped-quotes-and-backslashes"),
        pytest.param('["\\u005b\\u005b"]', 1, id="unicode-escapes-are-not-brackets"),
        pytest.param('[1, "unterminated [[[', 4, id="not-json-may-count-more"),
    ],
)
def test_nesting_depth_counts_only_structure(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth


def test_a_document_at_the_limit_parses_and_one_level_more_is_refused() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert nesting_depth(at_limit) == MAX_JSON_DEPTH
    assert loads_bounded(at_limit) == json.loads(at_limit)
    with pytest.raises(JSONDepthError) as caught:
        loads_bounded("[" + at_limit + "]")
    assert caught.value.limit == MAX_JSON_DEPTH
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[" * 100_000, id="arrays-never-closed"),
        pytest.param('{"a":' * 50_000 + "1" + "}" * 50_000, id="objects"),
        pytest.param('{"messages":[{"role":"user","content":' + "[" * 5000 + "]" * 5000 + "}]}", id="inside-a-message"),
    ],
)
def test_deep_documents_are_refused_before_any_recursive_parse(text: str) -> None:
    with pytest.raises(JSONDepthError):
        loads_bounded(text)


def test_many_openers_that_do_not_nest_are_read() -> None:
    text = json.dumps([[i] for i in range(1000)])
    assert loads_bounded(text) == [[i] for i in range(1000)]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(constant: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_bounded(f'{{"t": {constant}}}')


def test_an_integer_over_the_digit_limit_is_a_plain_value_error_not_a_decode_error() -> None:
    with pytest.raises(ValueError) as caught:
        loads_bounded('{"n": ' + "9" * 5000 + "}")
    assert not isinstance(caught.value, json.JSONDecodeError)


def test_a_float_too_large_reads_as_infinity_for_the_caller_to_range_check() -> None:
    assert loads_bounded("[1e400]") == [float("inf")]


def test_a_body_of_escaped_quotes_is_scanned_in_one_pass() -> None:
    # Each escaped quote could start a scan to the end in a naive string regex: 64 KB of
    # them would take minutes. Escapes are removed first, so this is one linear pass.
    hostile = '["' + '\\"' * 32_000
    assert nesting_depth(hostile) == 1
