"""Structured outputs' schemas on CPython (chat.output.schema): every refusal naming its place,
every bound at and just over it, strict and non-strict rules, the check of answers keyword by
keyword, recursive schemas checked without recursion, and properties over generated schemas
and the answers generated to satisfy them."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from chat.output import schema as output
from chat.output.schema import checked_schema, parse_json_answer
from chat.web.errors import ApiError

FIELD = "response_format.json_schema.schema"
# Strings of generated answers are drawn with this character, which no schema holds: a
# violation that quoted the answer would show it.
SECRET = "\u00a7"


def closed(**properties: Any) -> dict:
    """A strict object: every property required, no others allowed."""
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def refusal(schema: object, *, strict: bool = False) -> ApiError:
    with pytest.raises(ApiError) as caught:
        checked_schema(schema, FIELD, strict=strict)
    error = caught.value
    assert (error.status, error.code) == (400, "invalid_request")
    return error


def assert_names(error: ApiError, param: str) -> None:
    assert error.param == param and param in error.message, (error.param, error.message)


def violation(schema: dict, instance: object, *, strict: bool = False) -> str | None:
    return checked_schema(schema, FIELD, strict=strict).violation(instance)


@contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    # A recursive walk of thousands of levels could not pass unnoticed under this limit.
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def nested_arrays(levels: int, leaf: dict | None = None) -> dict:
    schema = leaf or {"type": "string"}
    for _ in range(levels - 1):
        schema = {"type": "array", "items": schema}
    return schema


# The refusals: keywords outside the subset, each at its place.


@pytest.mark.parametrize(
    "keyword",
    ["allOf", "oneOf", "not", "if", "then", "else", "patternProperties", "dependentRequired", "dependentSchemas", "prefixItems",
     "unevaluatedProperties", "unevaluatedItems", "propertyNames", "minProperties", "maxProperties", "contains", "uniqueItems",
     "$anchor", "$dynamicRef", "contentEncoding", "nullable"],
)
def test_a_keyword_outside_the_subset_is_refused_naming_it_and_its_place(keyword):
    schema = closed(age={"type": "integer", keyword: {}})
    assert_names(refusal(schema), f"{FIELD}.properties.age.{keyword}")
    assert_names(refusal(schema, strict=True), f"{FIELD}.properties.age.{keyword}")


def test_a_name_that_is_not_plain_is_named_by_its_position_never_echoed():
    hostile = "<script>" + "x" * 100
    error = refusal({"type": "object", "properties": {"ok": {"type": "string"}, hostile: {"type": "int"}}})
    assert_names(error, f"{FIELD}.properties[#1].type")
    assert hostile not in error.message
    assert_names(refusal({"type": "string", "x-" + "y" * 64: 1}), f"{FIELD}[#1]")
    assert_names(refusal({"type": "string", 7: 1}), f"{FIELD}[#1]")  # schemas built in Python
    assert_names(refusal({"type": "object", "properties": {7: {"type": "int"}}}), f"{FIELD}.properties[#0].type")


@pytest.mark.parametrize(
    ("schema", "param"),
    [
        pytest.param([], FIELD, id="a-list"),
        pytest.param("{}", FIELD, id="a-string"),
        pytest.param(True, FIELD, id="a-boolean-schema"),
        pytest.param({"type": "int"}, f"{FIELD}.type", id="type-unknown"),
        pytest.param({"type": []}, f"{FIELD}.type", id="type-empty-list"),
        pytest.param({"type": ["string", "string"]}, f"{FIELD}.type", id="type-repeated"),
        pytest.param({"type": ["string", 5]}, f"{FIELD}.type", id="type-not-a-name"),
        pytest.param({"type": {"name": "string"}}, f"{FIELD}.type", id="type-an-object"),
        pytest.param({"type": "object", "properties": []}, f"{FIELD}.properties", id="properties-a-list"),
        pytest.param({"type": "object", "properties": {"age": "integer"}}, f"{FIELD}.properties.age", id="property-not-a-schema"),
        pytest.param({"type": "object", "required": "age"}, f"{FIELD}.required", id="required-a-string"),
        pytest.param({"type": "object", "required": ["age", 1]}, f"{FIELD}.required", id="required-not-names"),
        pytest.param({"type": "object", "required": ["a", "b", "a"]}, f"{FIELD}.required[2]", id="required-repeated"),
        pytest.param({"type": "object", "additionalProperties": "no"}, f"{FIELD}.additionalProperties", id="additional-a-string"),
        pytest.param({"type": "array", "items": [{"type": "string"}]}, f"{FIELD}.items", id="items-a-tuple"),
        pytest.param({"type": "array", "items": "string"}, f"{FIELD}.items", id="items-not-a-schema"),
        pytest.param({"anyOf": []}, f"{FIELD}.anyOf", id="anyOf-empty"),
        pytest.param({"anyOf": {"type": "string"}}, f"{FIELD}.anyOf", id="anyOf-not-a-list"),
        pytest.param({"anyOf": [{"type": "string"}, "null"]}, f"{FIELD}.anyOf[1]", id="anyOf-branch-not-a-schema"),
        pytest.param({"enum": []}, f"{FIELD}.enum", id="enum-empty"),
        pytest.param({"enum": "a"}, f"{FIELD}.enum", id="enum-not-a-list"),
        pytest.param({"type": "number", "minimum": "1"}, f"{FIELD}.minimum", id="minimum-a-string"),
        pytest.param({"type": "number", "maximum": True}, f"{FIELD}.maximum", id="maximum-a-boolean"),
        pytest.param({"type": "number", "exclusiveMinimum": True}, f"{FIELD}.exclusiveMinimum", id="draft-4-exclusive-minimum"),
        pytest.param({"type": "number", "exclusiveMaximum": None}, f"{FIELD}.exclusiveMaximum", id="exclusive-maximum-null"),
        pytest.param({"type": "number", "multipleOf": 0}, f"{FIELD}.multipleOf", id="multipleOf-zero"),
        pytest.param({"type": "number", "multipleOf": -2}, f"{FIELD}.multipleOf", id="multipleOf-negative"),
        pytest.param({"type": "string", "minLength": -1}, f"{FIELD}.minLength", id="minLength-negative"),
        pytest.param({"type": "string", "maxLength": 1.5}, f"{FIELD}.maxLength", id="maxLength-a-fraction"),
        pytest.param({"type": "array", "minItems": True}, f"{FIELD}.minItems", id="minItems-a-boolean"),
        pytest.param({"type": "array", "maxItems": "3"}, f"{FIELD}.maxItems", id="maxItems-a-string"),
        pytest.param({"type": "string", "format": "uri"}, f"{FIELD}.format", id="format-unsupported"),
        pytest.param({"type": "string", "format": ["date"]}, f"{FIELD}.format", id="format-a-list"),
        pytest.param({"type": "string", "pattern": 5}, f"{FIELD}.pattern", id="pattern-a-number"),
        pytest.param({"$ref": 5}, f"{FIELD}.$ref", id="ref-a-number"),
        pytest.param({"$ref": "https://example.com/schema"}, f"{FIELD}.$ref", id="ref-elsewhere"),
        pytest.param({"$ref": "#/properties/a"}, f"{FIELD}.$ref", id="ref-into-properties"),
        pytest.param({"$ref": "#/$defs/a/properties/b", "$defs": {"a": {"type": "string"}}}, f"{FIELD}.$ref", id="ref-into-a-definition"),
        pytest.param({"$ref": "#/$defs/missing", "$defs": {}}, f"{FIELD}.$ref", id="ref-to-no-definition"),
        pytest.param({"$ref": "#/definitions/a", "$defs": {"a": {"type": "string"}}}, f"{FIELD}.$ref", id="ref-to-the-other-container"),
        pytest.param({"$ref": "#/$defs/a", "type": "string", "$defs": {"a": {}}}, f"{FIELD}.type", id="ref-with-a-sibling"),
        pytest.param({"type": "object", "properties": {"a": {"$defs": {}}}}, f"{FIELD}.properties.a.$defs", id="defs-below-the-root"),
        pytest.param({"type": "array", "items": {"$id": "x"}}, f"{FIELD}.items.$id", id="id-below-the-root"),
        pytest.param({"$defs": []}, f"{FIELD}.$defs", id="defs-a-list"),
        pytest.param({"definitions": {"a": 1}}, f"{FIELD}.definitions.a", id="definition-not-a-schema"),
        pytest.param({"type": "number", "maximum": float("inf")}, FIELD, id="a-number-json-cannot-carry"),
    ],
)
def test_a_malformed_schema_is_refused_naming_the_place(schema, param):
    assert_names(refusal(schema), param)


def test_a_ref_may_hold_annotations_beside_it_and_the_root_its_definitions():
    schema = {"$ref": "#/$defs/name", "description": "a name", "$schema": "https://json-schema.org/draft/2020-12/schema",
              "$defs": {"name": {"type": "string", "title": "Name", "examples": ["Ada"], "default": "", "$comment": "c"}}}
    assert violation(schema, "Ada") is None
    assert violation(schema, 1) == "$: expected string"


@pytest.mark.parametrize(
    ("schema", "param"),
    [
        pytest.param({"$ref": "#"}, FIELD, id="the-root-itself"),
        pytest.param({"anyOf": [{"type": "string"}, {"$ref": "#"}]}, f"{FIELD}.anyOf[1]", id="anyOf-of-the-root"),
        pytest.param({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}},
                     f"{FIELD}.$defs.b.anyOf[0]", id="through-definitions"),
    ],
)
def test_a_schema_that_comes_back_to_itself_without_reading_further_is_refused(schema, param):
    error = refusal(schema)
    assert_names(error, param)
    assert "never end" in error.message


def test_json_pointer_escapes_in_a_ref_are_read():
    schema = {"anyOf": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/definitions/c~0d"}],
              "$defs": {"a/b": {"type": "string"}}, "definitions": {"c~d": {"type": "null"}}}
    assert violation(schema, "x") is None and violation(schema, None) is None
    assert violation(schema, 1) == "$: matches none of the 2 schemas of anyOf"


# The bounds, at and just over each.


def schema_of_bytes(size: int, char: str = "x") -> dict:
    # '{"description":""}' is 18 bytes; each `char` adds its UTF-8 length.
    padding, rest = divmod(size - 18, len(char.encode()))
    assert rest == 0
    return {"description": char * padding}


def object_with_properties(count: int) -> dict:
    return {"type": "object", "properties": {f"p{i}": {} for i in range(count)}}


def definitions(count: int) -> dict:
    return {"$defs": {f"d{i}": {} for i in range(count)}}


@pytest.mark.parametrize(
    ("schema", "ok"),
    [
        pytest.param(schema_of_bytes(16 * 1024), True, id="16-KiB"),
        pytest.param(schema_of_bytes(16 * 1024 + 1), False, id="16-KiB-and-a-byte"),
        pytest.param(schema_of_bytes(16 * 1024 + 2, "\u00e9"), False, id="bytes-not-characters"),
        pytest.param({"default": json.loads("[" * 63 + "]" * 63)}, True, id="json-64-deep"),
        pytest.param({"default": json.loads("[" * 64 + "]" * 64)}, False, id="json-65-deep"),
    ],
)
def test_a_schema_is_at_most_16_KiB_of_json_and_64_levels_of_it(schema, ok):
    if ok:
        checked_schema(schema, FIELD, strict=False)
    else:
        assert_names(refusal(schema), FIELD)


@pytest.mark.parametrize(
    ("schema", "param"),
    [
        pytest.param(nested_arrays(10), None, id="10-levels"),
        pytest.param(nested_arrays(11), f"{FIELD}{'.items' * 10}", id="11-levels"),
        pytest.param(nested_arrays(10, {"anyOf": [{"anyOf": [{"type": "string"}]}]}), None, id="anyOf-is-no-level"),
        pytest.param({"type": "object", "additionalProperties": nested_arrays(10)}, f"{FIELD}.additionalProperties{'.items' * 9}",
                     id="additional-properties-is-a-level"),
        pytest.param({"$ref": "#/$defs/deep", "$defs": {"deep": nested_arrays(10)}}, None, id="a-definition-starts-at-level-1"),
        pytest.param(object_with_properties(1000), None, id="1000-properties"),
        pytest.param(object_with_properties(1001), f"{FIELD}.properties", id="1001-properties"),
        pytest.param({"anyOf": [object_with_properties(600), object_with_properties(401)]}, f"{FIELD}.anyOf[1].properties",
                     id="properties-count-in-all"),
        pytest.param({"enum": list(range(1000))}, None, id="1000-enum-values"),
        pytest.param({"anyOf": [{"enum": list(range(999))}, {"enum": [1, 2]}]}, f"{FIELD}.anyOf[1].enum", id="1001-enum-values"),
        pytest.param(definitions(100), None, id="100-definitions"),
        pytest.param(definitions(101), f"{FIELD}.$defs", id="101-definitions"),
        pytest.param({**definitions(60), "definitions": {f"e{i}": {} for i in range(41)}}, f"{FIELD}.definitions",
                     id="both-containers-count"),
        pytest.param({"type": "string", "pattern": "a" * 256}, None, id="pattern-256-characters"),
        pytest.param({"type": "string", "pattern": "a" * 257}, f"{FIELD}.pattern", id="pattern-257-characters"),
    ],
)
def test_levels_properties_enum_values_definitions_and_patterns_are_bounded(schema, param):
    if param is None:
        checked_schema(schema, FIELD, strict=False)
    else:
        assert_names(refusal(schema), param)


def test_a_schema_10000_levels_deep_is_refused_without_recursion():
    with recursion_limit(200):
        assert_names(refusal(nested_arrays(10_000)), FIELD)


def test_a_schema_that_contains_itself_is_refused_as_too_deep():
    cycle: dict = {"type": "object"}
    cycle["properties"] = {"self": cycle}
    assert_names(refusal(cycle), FIELD)


def test_the_bounds_are_within_openais():
    assert output.MAX_SCHEMA_LEVELS <= 10 and output.MAX_SCHEMA_PROPERTIES <= 5000 and output.MAX_ENUM_VALUES <= 1000


# Strict mode and not.


@pytest.mark.parametrize(
    ("schema", "param"),
    [
        pytest.param({"type": "string"}, FIELD, id="root-not-an-object"),
        pytest.param({"type": ["object", "null"], "properties": {}, "additionalProperties": False}, FIELD, id="root-nullable"),
        pytest.param({"anyOf": [closed(), closed(a={"type": "string"})]}, FIELD, id="root-anyOf"),
        pytest.param({**closed(), "anyOf": [closed()]}, FIELD, id="root-object-and-anyOf"),
        pytest.param({"$ref": "#/$defs/a", "$defs": {"a": closed()}}, FIELD, id="root-ref"),
        pytest.param({"type": "object", "properties": {}}, f"{FIELD}.additionalProperties", id="additional-properties-missing"),
        pytest.param({**closed(), "additionalProperties": True}, f"{FIELD}.additionalProperties", id="additional-properties-true"),
        pytest.param({**closed(), "additionalProperties": {"type": "string"}}, f"{FIELD}.additionalProperties",
                     id="additional-properties-a-schema"),
        pytest.param({**closed(a={"type": "string"}, b={"type": "string"}), "required": ["a"]}, f"{FIELD}.required",
                     id="a-property-not-required"),
        pytest.param({**closed(a={"type": "string"}), "required": ["a", "b"]}, f"{FIELD}.required[1]", id="required-no-property"),
        pytest.param(closed(a=closed(b={"type": "object", "properties": {}})), f"{FIELD}.properties.a.properties.b.additionalProperties",
                     id="a-nested-object-not-closed"),
        pytest.param(closed(a={"anyOf": [{"type": "null"}, {"type": "object"}]}), f"{FIELD}.properties.a.anyOf[1].additionalProperties",
                     id="an-object-in-anyOf-not-closed"),
        pytest.param(closed(a={"type": "array", "items": {"enum": [{}], "properties": {}}}), f"{FIELD}.properties.a.items.additionalProperties",
                     id="object-keywords-make-an-object"),
        pytest.param(closed(a={}), f"{FIELD}.properties.a", id="a-schema-allowing-anything"),
        pytest.param(closed(a={"description": "any"}), f"{FIELD}.properties.a", id="a-schema-of-annotations-only"),
    ],
)
def test_strict_mode_holds_openais_rules_and_the_hint_mode_does_not(schema, param):
    assert_names(refusal(schema, strict=True), param)
    assert checked_schema(schema, FIELD, strict=False).strict is False


def test_strict_mode_names_the_property_required_leaves_out():
    error = refusal({**closed(a={"type": "string"}, b={"type": "string"}), "required": ["a"]}, strict=True)
    assert f"{FIELD}.properties.b" in error.message


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(closed(), id="an-empty-object"),
        pytest.param(closed(unit={"type": ["string", "null"], "enum": ["F", "C", None]}), id="nullable-enum"),
        pytest.param(closed(value={"anyOf": [{"type": "string"}, {"type": "number"}, closed(column={"type": "string"})]}), id="anyOf"),
        pytest.param({**closed(next={"anyOf": [{"type": "null"}, {"$ref": "#"}]}), "$defs": {}}, id="recursive-through-the-root"),
        pytest.param({**closed(item={"$ref": "#/$defs/item"}), "$defs": {"item": closed(id={"const": 1})}}, id="a-definition"),
    ],
)
def test_a_strict_schema_is_taken_in_both_modes(schema):
    assert checked_schema(schema, FIELD, strict=True).strict is True
    assert checked_schema(schema, FIELD, strict=False).strict is False


# The check of answers, keyword by keyword.


@pytest.mark.parametrize(
    ("schema", "instance", "expected"),
    [
        pytest.param({"type": "string"}, "a", None, id="string"),
        pytest.param({"type": "string"}, 1, "$: expected string", id="not-a-string"),
        pytest.param({"type": "integer"}, 3, None, id="integer"),
        pytest.param({"type": "integer"}, 3.0, None, id="an-integral-float-is-an-integer"),
        pytest.param({"type": "integer"}, 3.5, "$: expected integer", id="a-fraction-is-no-integer"),
        pytest.param({"type": "integer"}, True, "$: expected integer", id="true-is-no-integer"),
        pytest.param({"type": "integer"}, float("inf"), "$: expected integer", id="infinity-is-no-integer"),
        pytest.param({"type": "number"}, 3, None, id="an-integer-is-a-number"),
        pytest.param({"type": "number"}, 2.5, None, id="number"),
        pytest.param({"type": "number"}, False, "$: expected number", id="false-is-no-number"),
        pytest.param({"type": "number"}, "1", "$: expected number", id="a-numeric-string-is-no-number"),
        pytest.param({"type": "boolean"}, False, None, id="boolean"),
        pytest.param({"type": "boolean"}, 0, "$: expected boolean", id="zero-is-no-boolean"),
        pytest.param({"type": "null"}, None, None, id="null"),
        pytest.param({"type": "null"}, [], "$: expected null", id="not-null"),
        pytest.param({"type": "array"}, [1, "a"], None, id="array"),
        pytest.param({"type": "object"}, {"a": 1}, None, id="object"),
        pytest.param({"type": "object"}, [], "$: expected object", id="not-an-object"),
        pytest.param({"type": ["null", "string"]}, None, None, id="a-list-of-types"),
        pytest.param({"type": ["null", "string"]}, 1, "$: expected string or null", id="a-list-of-types-in-their-order"),
        pytest.param({"type": "string"}, ("a",), "$: expected string", id="not-a-json-value"),
        pytest.param({}, {"anything": [1, None]}, None, id="no-type"),
        pytest.param({"minimum": 1}, {1, 2}, None, id="no-type-no-check-of-what-json-cannot-give"),
    ],
)
def test_type(schema, instance, expected):
    assert violation(schema, instance) == expected


@pytest.mark.parametrize(
    ("schema", "instance", "expected"),
    [
        pytest.param({"enum": ["F", "C"]}, "C", None, id="a-string"),
        pytest.param({"enum": ["F", "C"]}, "K", "$: not one of the enum's values", id="not-among-strings"),
        pytest.param({"enum": [1.0]}, 1, None, id="1-is-1.0"),
        pytest.param({"enum": [1]}, True, "$: not one of the enum's values", id="true-is-not-1"),
        pytest.param({"enum": [True]}, 1, "$: not one of the enum's values", id="1-is-not-true"),
        pytest.param({"enum": [0]}, False, "$: not one of the enum's values", id="false-is-not-0"),
        pytest.param({"enum": [None, "x"]}, None, None, id="null"),
        pytest.param({"enum": [[1, 2]]}, [1, 2.0], None, id="an-array"),
        pytest.param({"enum": [[1, 2]]}, [2, 1], "$: not one of the enum's values", id="an-array-in-order"),
        pytest.param({"enum": [[1, 2]]}, [1], "$: not one of the enum's values", id="an-array-of-its-length"),
        pytest.param({"enum": [[1]]}, [True], "$: not one of the enum's values", id="an-array-of-true-is-not-one-of-1"),
        pytest.param({"enum": [[{"a": 1}]]}, [{"a": 1}], None, id="an-object-in-an-array"),
        pytest.param({"enum": [{"a": [1], "b": None}]}, {"b": None, "a": [1.0]}, None, id="an-object-in-any-order"),
        pytest.param({"enum": [{"a": 1}]}, {"a": 1, "b": 2}, "$: not one of the enum's values", id="an-object-with-more-keys"),
        pytest.param({"enum": [{"a": []}]}, {"a": {}}, "$: not one of the enum's values", id="an-array-is-no-object"),
        pytest.param({"enum": [{"a": {}}]}, {"a": []}, "$: not one of the enum's values", id="an-object-is-no-array"),
        pytest.param({"enum": [[[]]]}, [1], "$: not one of the enum's values", id="a-number-is-no-array"),
        pytest.param({"enum": [[1]]}, [[1]], "$: not one of the enum's values", id="an-array-is-no-number"),
        pytest.param({"enum": [[1]]}, [(1,)], "$: not one of the enum's values", id="not-json-inside"),
        pytest.param({"enum": ["a"]}, {"a"}, "$: not one of the enum's values", id="not-json"),
        pytest.param({"const": {"v": 1}}, {"v": 1.0}, None, id="const"),
        pytest.param({"const": 1}, True, "$: not the const value", id="const-true-is-not-1"),
        pytest.param({"const": None}, 0, "$: not the const value", id="const-null-is-not-0"),
    ],
)
def test_enum_and_const_compare_as_json_does(schema, instance, expected):
    assert violation(schema, instance) == expected


@pytest.mark.parametrize(
    ("schema", "instance", "expected"),
    [
        pytest.param({"minimum": 1}, 1, None, id="minimum-reached"),
        pytest.param({"minimum": 1}, 0.5, "$: less than minimum", id="below-minimum"),
        pytest.param({"exclusiveMinimum": 1}, 1.5, None, id="above-exclusive-minimum"),
        pytest.param({"exclusiveMinimum": 1}, 1.0, "$: not greater than exclusiveMinimum", id="at-exclusive-minimum"),
        pytest.param({"maximum": 2.5}, 2.5, None, id="maximum-reached"),
        pytest.param({"maximum": 2.5}, 3, "$: greater than maximum", id="above-maximum"),
        pytest.param({"exclusiveMaximum": 0}, -1e-9, None, id="below-exclusive-maximum"),
        pytest.param({"exclusiveMaximum": 0}, 0, "$: not less than exclusiveMaximum", id="at-exclusive-maximum"),
        pytest.param({"maximum": 10 ** 30}, 10 ** 30 + 1, "$: greater than maximum", id="large-integers-exactly"),
        pytest.param({"maximum": 1e308}, float("inf"), "$: greater than maximum", id="infinity"),
        pytest.param({"multipleOf": 2}, 10, None, id="a-multiple"),
        pytest.param({"multipleOf": 2}, 7, "$: not a multiple of multipleOf", id="not-a-multiple"),
        pytest.param({"multipleOf": 0.1}, 0.3, None, id="decimal-multiples-as-written"),
        pytest.param({"multipleOf": 0.01}, 19.99, None, id="cents"),
        pytest.param({"multipleOf": 0.01}, 19.999, "$: not a multiple of multipleOf", id="not-cents"),
        pytest.param({"multipleOf": 2.5}, 10, None, id="an-integer-of-a-fraction"),
        pytest.param({"multipleOf": 3}, 10 ** 100 + 2, None, id="a-large-integer"),
        pytest.param({"multipleOf": 1e-300}, 1e300, None, id="far-apart-exponents"),
        pytest.param({"multipleOf": 1}, float("inf"), "$: not a multiple of multipleOf", id="infinity-is-no-multiple"),
        pytest.param({"minimum": 5, "multipleOf": 2}, "a", None, id="only-for-numbers"),
        pytest.param({"minimum": 5}, True, None, id="a-boolean-is-no-number-to-bound"),
    ],
)
def test_numeric_bounds(schema, instance, expected):
    assert violation(schema, instance) == expected


@pytest.mark.parametrize(
    ("schema", "instance", "expected"),
    [
        pytest.param({"minLength": 2, "maxLength": 3}, "ab", None, id="within"),
        pytest.param({"minLength": 2}, "a", "$: shorter than minLength", id="too-short"),
        pytest.param({"maxLength": 3}, "abcd", "$: longer than maxLength", id="too-long"),
        pytest.param({"maxLength": 1}, "\U0001f600", None, id="characters-not-utf-16-units"),
        pytest.param({"maxLength": 1.0}, "\u00e9", None, id="an-integral-float-bound"),
        pytest.param({"minLength": 5}, 1, None, id="only-for-strings"),
        pytest.param({"pattern": "^[0-9]+$"}, "not digits", None, id="pattern-is-not-enforced"),
        pytest.param({"minItems": 1, "maxItems": 2}, [1], None, id="items-within"),
        pytest.param({"minItems": 1}, [], "$: fewer items than minItems", id="too-few-items"),
        pytest.param({"maxItems": 1}, [1, 2], "$: more items than maxItems", id="too-many-items"),
        pytest.param({"items": {"type": "integer"}}, [1, 2, "3"], "$[2]: expected integer", id="items"),
        pytest.param({"items": {"type": "integer"}, "minItems": 1}, "x", None, id="only-for-arrays"),
    ],
)
def test_lengths_and_items(schema, instance, expected):
    assert violation(schema, instance) == expected


@pytest.mark.parametrize(
    ("schema", "instance", "expected"),
    [
        pytest.param(closed(age={"type": "integer"}), {"age": 3}, None, id="closed"),
        pytest.param(closed(age={"type": "integer"}), {}, "$: missing the required property age", id="missing"),
        pytest.param(closed(age={"type": "integer"}), {"age": 3, "x": 1}, "$[#1]: a property the schema does not allow "
                     "(additionalProperties is false)", id="not-allowed"),
        pytest.param({"properties": {"age": {"type": "integer"}}}, {"x": "y"}, None, id="open"),
        pytest.param({"additionalProperties": {"type": "string"}}, {"a": "b", "c": 1}, "$[#1]: expected string", id="additional-schema"),
        pytest.param({"properties": {"a": {}}, "additionalProperties": {"type": "string"}}, {"a": 1, "b": "c"}, None,
                     id="additional-schema-only-for-others"),
        pytest.param({"properties": {"a b": {"type": "integer"}}}, {"x": 0, "a b": "1"}, "$[#1]: expected integer",
                     id="a-name-that-is-not-plain"),
        pytest.param({"required": ["a b"]}, {}, "$: missing the required property that required[0] names", id="required-not-plain"),
        pytest.param({"properties": {"items": {"type": "array", "items": closed(age={"type": "integer"})}}},
                     {"items": [{"age": 1}, {"age": 2}, {"age": 3}, {"age": "4"}]}, "$.items[3].age: expected integer", id="nested"),
        pytest.param({"properties": {"a": {"type": "integer"}}}, [{"a": "x"}], None, id="only-for-objects"),
    ],
)
def test_objects(schema, instance, expected):
    assert violation(schema, instance) == expected


def test_an_unexpected_property_is_named_by_position_never_by_its_name():
    assert violation(closed(), {SECRET: 1}) == "$[#0]: a property the schema does not allow (additionalProperties is false)"


@pytest.mark.parametrize(
    ("instance", "expected"),
    [
        pytest.param("a", None, id="the-first-branch"),
        pytest.param({"column": "c"}, None, id="the-last-branch"),
        pytest.param(1, None, id="a-nested-anyOf"),
        pytest.param({"column": 1}, "$: matches none of the 3 schemas of anyOf", id="none"),
        pytest.param(True, "$: matches none of the 3 schemas of anyOf", id="none-nested-either"),
    ],
)
def test_any_of(instance, expected):
    schema = {"anyOf": [{"type": "string"}, {"anyOf": [{"type": "null"}, {"type": "integer"}]}, closed(column={"type": "string"})]}
    assert violation(schema, instance) == expected


def test_a_violation_inside_anyOf_names_the_anyOf_and_the_check_goes_on_after_it():
    schema = closed(a={"anyOf": [{"type": "null"}, closed(b={"type": "integer"})]}, c={"type": "string"})
    assert violation(schema, {"a": {"b": "x"}, "c": "ok"}) == "$.a: matches none of the 2 schemas of anyOf"
    assert violation(schema, {"a": {"b": 1}, "c": 2}) == "$.c: expected string"
    assert violation(schema, {"a": None, "c": "ok"}) is None


def test_the_first_violation_is_the_first_in_the_answers_order():
    schema = closed(a={"type": "integer"}, b={"items": {"type": "integer"}}, c={"type": "integer"})
    assert violation(schema, {"a": 1, "b": [0, "x", "y"], "c": "z"}) == "$.b[1]: expected integer"


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date-time", ["2026-12-02T10:20:30Z", "2026-12-02t10:20:30.123456+01:00", "2024-02-29T23:59:60-00:00"],
         ["2026-12-02T10:20:30", "2026-12-02 10:20:30Z", "2023-02-29T00:00:00Z", "2026-12-02T10:20Z", "2026-12-02"]),
        ("date", ["2026-12-02", "2000-02-29", "0000-01-01"],
         ["2026-13-01", "2026-00-10", "2026-04-31", "1900-02-29", "2026-1-02", "\u0662\u0660\u0662\u0666-12-02", "2026-12-02\n"]),
        ("time", ["10:20:30Z", "23:59:60+14:00", "00:00:00.5z"], ["24:00:00Z", "10:60:00Z", "10:20:61Z", "10:20:30", "10:20:30+24:00",
                                                                  "10:20:30+01:60"]),
        ("duration", ["P1Y2M3DT4H5M6S", "P4W", "PT1M", "P1D", "PT36H", "P1M1D", "PT1M30S"],
         ["P", "PT", "P1H", "P1Y1D", "PT1H1S", "1D", "P1W1D", "P-1D"]),
        ("email", ["ada@example.com", "a.b+c@mail.example.org", "x@localhost"],
         ["a..b@example.com", "@example.com", "ada@", "ada", "ada@-example.com", "a" * 65 + "@example.com", "a b@example.com"]),
        ("hostname", ["example.com", "a" * 63 + ".com", "localhost", "xn--bcher-kva.example"],
         ["-a.com", "a-.com", "a" * 64 + ".com", "ex_ample.com", "example.com.", "", ".".join(["a" * 63] * 4)]),
        ("ipv4", ["192.168.0.1", "0.0.0.0"], ["192.168.0.01", "256.0.0.1", "1.2.3", "1.2.3.4/32", " 1.2.3.4"]),
        ("ipv6", ["::1", "2001:db8::1", "::ffff:1.2.3.4"], ["fe80::1%eth0", "1:2", "2001:db8::g", "1.2.3.4"]),
        ("uuid", ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000"],
         ["123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000"]),
    ],
)
def test_formats(fmt, good, bad):
    compiled = checked_schema({"type": "string", "format": fmt}, FIELD, strict=False)
    for text in good:
        assert compiled.violation(text) is None, text
    for text in bad:
        assert compiled.violation(text) == f"$: not a valid {fmt}", text


def test_every_supported_format_has_a_check():
    assert set(output.FORMATS) == {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}


# Recursive schemas, deep answers, and the bound on the work.

TREE = {
    **closed(label={"type": "string"}, children={"type": "array", "items": {"$ref": "#/$defs/tree"}}),
    "$defs": {"tree": closed(label={"type": "string"}, children={"type": "array", "items": {"$ref": "#/$defs/tree"}})},
}


def deep_tree(levels: int, leaf_label: object = "leaf") -> dict:
    node: dict = {"label": leaf_label, "children": []}
    for _ in range(levels - 1):
        node = {"label": "branch", "children": [node]}
    return node


def test_a_recursive_schema_checks_an_answer_5000_levels_deep_without_recursion():
    compiled = checked_schema(TREE, FIELD, strict=True)
    with recursion_limit(200):
        assert compiled.violation(deep_tree(5000)) is None
        failure = compiled.violation(deep_tree(5000, leaf_label=3))
    # Of so deep a place, only the first and last steps are shown.
    assert failure == "$.children[0].children[0].children[0][... 9987 steps ...][0].children[0].children[0].label: expected string"


def test_a_recursive_anyOf_checks_a_list_5000_links_long_without_recursion():
    compiled = checked_schema(closed(value={"type": "integer"}, next={"anyOf": [{"type": "null"}, {"$ref": "#"}]}), FIELD, strict=True)
    links: list[dict] = [{"value": value, "next": None} for value in range(5000)]
    for link, following in pairwise(links):
        link["next"] = following
    with recursion_limit(200):
        assert compiled.violation(links[0]) is None
        links[-1]["value"] = "last"
        assert compiled.violation(links[0]) == "$.next: matches none of the 2 schemas of anyOf"


@pytest.fixture
def budget_of_1000(monkeypatch: pytest.MonkeyPatch) -> str:
    """A bound of 1,000 steps (the check reads it when it starts), and what going past it says."""
    monkeypatch.setattr(output, "MAX_CHECK_STEPS", 1000)
    return "$: too large to check (more than 1000 steps)"


def test_a_check_of_more_steps_than_the_bound_reports_the_answer_too_large_to_check(budget_of_1000):
    compiled = checked_schema({"type": "array", "items": {"type": "integer"}}, FIELD, strict=False)
    assert compiled.violation(list(range(999))) is None  # the array and its items: 1,000 steps
    assert compiled.violation(list(range(1000))) == budget_of_1000


def test_members_read_without_a_schema_count_towards_the_bound(budget_of_1000):
    compiled = checked_schema({"type": "object"}, FIELD, strict=False)
    assert compiled.violation({f"k{i}": i for i in range(999)}) is None
    assert compiled.violation({f"k{i}": i for i in range(1000)}) == budget_of_1000


def test_comparisons_with_an_enums_arrays_count_towards_the_bound(budget_of_1000):
    compiled = checked_schema({"items": {"enum": [[0] * 10, [1] * 10]}}, FIELD, strict=False)
    assert compiled.violation([[0] * 10] * 10) is None
    assert compiled.violation([[0] * 10] * 100) == budget_of_1000


def test_an_answer_that_contains_itself_ends_as_too_large_to_check(budget_of_1000):
    cycle: list = []
    cycle.append(cycle)
    compiled = checked_schema({"$ref": "#/$defs/list", "$defs": {"list": {"type": "array", "items": {"$ref": "#/$defs/list"}}}},
                              FIELD, strict=False)
    assert compiled.violation(cycle) == budget_of_1000


def test_branches_that_fail_late_are_retried_only_within_the_bound(budget_of_1000):
    # Each level's first branch fails only after its whole subtree has matched, so the
    # second checks the subtree again: the work doubles with every level.
    node = {"anyOf": [closed(a={"$ref": "#/$defs/node"}, tag={"const": 1}), closed(a={"$ref": "#/$defs/node"}, tag={"const": 2}),
                      {"type": "null"}]}
    compiled = checked_schema({"$ref": "#/$defs/node", "$defs": {"node": node}}, FIELD, strict=False)
    late: object = None
    early: object = None
    for _ in range(40):
        late, early = {"a": late, "tag": 2}, {"tag": 2, "a": early}
    assert compiled.violation(late) == budget_of_1000
    assert compiled.violation(early) is None  # the tag, read first, fails the first branch at once


# parse_json_answer.


@pytest.mark.parametrize(
    ("text", "value", "reason"),
    [
        pytest.param('{"a": 1}', {"a": 1}, None, id="an-object"),
        pytest.param(' \n\t{"a": [1, 2.5, null]}\r\n', {"a": [1, 2.5, None]}, None, id="json-whitespace-around"),
        pytest.param("null", None, None, id="null"),
        pytest.param("", None, "the answer is empty", id="empty"),
        pytest.param(" \n ", None, "the answer is empty", id="only-whitespace"),
        pytest.param('```json\n{"a": 1}\n```', None, "the answer is wrapped in a Markdown code fence, not bare JSON", id="fenced"),
        pytest.param('\n```\n{"a": 1}\n```\n', None, "the answer is wrapped in a Markdown code fence, not bare JSON", id="fenced-bare"),
        pytest.param('Here it is: {"a": 1}', None, "the answer is not JSON: Expecting value at line 1, column 1", id="prose"),
        pytest.param('{"a": 1}\n{"b": 2}', None, "the answer is not JSON: Extra data at line 2, column 1", id="two-values"),
        pytest.param("\u00a0{}", None, "the answer is not JSON: Expecting value at line 1, column 1", id="not-json-whitespace"),
        pytest.param('{"a": NaN}', None, "the answer is not JSON: NaN is not a JSON value at line 1, column 1", id="nan"),
        pytest.param("[" * 65 + "]" * 65, None, "the answer nests deeper than 64 levels", id="too-deep"),
        pytest.param("1" * 5000, None, "the answer holds an integer too long to read", id="too-long-an-integer"),
    ],
)
def test_parse_json_answer(text, value, reason):
    assert parse_json_answer(text) == (value, reason)


def test_the_reason_an_answer_is_not_json_never_quotes_it():
    value, reason = parse_json_answer('{"' + SECRET + '": tru}')
    assert value is None and reason is not None and SECRET not in reason


# Properties: generated schemas of the subset, and answers generated to satisfy them.

PLAIN_NAMES = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)
NAMES = st.one_of(PLAIN_NAMES, st.sampled_from(["a b", "x.y", "\u043a\u043b\u044e\u0447", "$ref", ""]))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.floats(-10, 10, allow_nan=False), st.text(max_size=3))
EXAMPLES = {
    "date-time": "2026-12-02T10:20:30Z", "time": "10:20:30+01:00", "date": "2026-12-02", "duration": "P3DT4H", "email": "ada@example.com",
    "hostname": "example.com", "ipv4": "10.0.0.1", "ipv6": "2001:db8::1", "uuid": "123e4567-e89b-12d3-a456-426614174000",
}


@st.composite
def string_schemas(draw: st.DrawFn) -> dict:
    fmt = draw(st.none() | st.sampled_from(sorted(EXAMPLES)))
    if fmt is not None:
        return {"type": "string", "format": fmt}
    schema: dict = {"type": "string", "pattern": "^[a-z]+$"} if draw(st.booleans()) else {"type": "string"}
    low = draw(st.none() | st.integers(0, 4))
    high = draw(st.none() | st.integers(low or 0, 6))
    if low is not None:
        schema["minLength"] = low
    if high is not None:
        schema["maxLength"] = high
    return schema


@st.composite
def integer_schemas(draw: st.DrawFn) -> dict:
    low = draw(st.integers(-100, 100))
    schema = {"type": "integer", "minimum": low, "maximum": low + draw(st.integers(5, 50))}
    if draw(st.booleans()):
        schema["multipleOf"] = draw(st.sampled_from([1, 2, 5]))
    return schema


@st.composite
def number_schemas(draw: st.DrawFn) -> dict:
    low = draw(st.integers(-100, 100))
    schema: dict = {"type": "number"}
    schema["exclusiveMinimum" if draw(st.booleans()) else "minimum"] = low / 4
    schema["exclusiveMaximum" if draw(st.booleans()) else "maximum"] = low / 4 + draw(st.integers(1, 20))
    return schema


LEAVES = st.one_of(
    string_schemas(), integer_schemas(), number_schemas(),
    st.just({"type": "boolean"}), st.just({"type": "null"}),
    st.builds(lambda values: {"enum": values}, st.lists(SCALARS | st.lists(SCALARS, max_size=2), min_size=1, max_size=4)),
    st.builds(lambda value: {"const": value}, SCALARS | st.dictionaries(PLAIN_NAMES, SCALARS, max_size=2)),
    st.builds(lambda schema: {**schema, "type": [schema["type"], "null"]}, string_schemas() | integer_schemas()),
)


def schemas(level: int = 1) -> st.SearchStrategy[dict]:
    """Strict schemas of the subset, nesting at most 5 levels."""
    if level >= 5:
        return LEAVES
    below = schemas(level + 1)
    return st.one_of(
        LEAVES,
        st.builds(lambda items, low, extra: {"type": "array", "items": items, "minItems": low, "maxItems": low + extra},
                  below, st.integers(0, 2), st.integers(0, 2)),
        st.builds(lambda properties: closed(**properties), st.dictionaries(NAMES, below, max_size=4)),
        st.builds(lambda branches: {"anyOf": branches, "description": "one of"}, st.lists(below, min_size=1, max_size=3)),
    )


ROOTS = st.builds(lambda properties: closed(**properties), st.dictionaries(NAMES, schemas(2), max_size=5))


def instance_of(schema: dict, draw: st.DrawFn) -> Any:
    """A value satisfying a schema `schemas()` generated (recursive: they nest 5 levels)."""
    if "anyOf" in schema:
        return instance_of(draw(st.sampled_from(schema["anyOf"])), draw)
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if "const" in schema:
        return schema["const"]
    kind = schema["type"]
    if isinstance(kind, list):
        if draw(st.booleans()):
            return None
        kind = kind[0]
    if kind == "string":
        if "format" in schema:
            return EXAMPLES[schema["format"]]
        return draw(st.text(alphabet=SECRET + "ab\u00e9", min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 6)))
    if kind == "integer":
        step = schema.get("multipleOf", 1)
        first, last = -(-schema["minimum"] // step), schema["maximum"] // step
        return draw(st.integers(first, last)) * step
    if kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        return draw(st.floats(low, high, exclude_min="exclusiveMinimum" in schema, exclude_max="exclusiveMaximum" in schema))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "null":
        return None
    if kind == "array":
        count = draw(st.integers(schema["minItems"], schema["maxItems"]))
        return [instance_of(schema["items"], draw) for _ in range(count)]
    return {name: instance_of(subschema, draw) for name, subschema in schema["properties"].items()}


@st.composite
def answers(draw: st.DrawFn) -> tuple[dict, Any]:
    schema = draw(ROOTS)
    assume(len(json.dumps(schema).encode()) <= output.MAX_SCHEMA_BYTES)
    return schema, instance_of(schema, draw)


WRONG_TYPES = [None, True, SECRET, 1.5, 7, [], {}]


def has_type(value: object, types: list[str]) -> bool:
    return checked_schema({"type": types}, FIELD, strict=False).violation(value) is None


@st.composite
def broken_answers(draw: st.DrawFn) -> tuple[dict, Any]:
    """A generated answer changed so that it cannot satisfy its schema: a required property
    left out, one added, or one of another type."""
    schema, answer = draw(answers())
    typed = [name for name, subschema in schema["properties"].items() if "type" in subschema]
    changes = ["add"] + (["drop"] if answer else []) + (["retype"] if typed else [])
    change = draw(st.sampled_from(changes))
    if change == "add":
        answer[SECRET + "extra"] = draw(st.sampled_from(WRONG_TYPES))
    elif change == "drop":
        del answer[draw(st.sampled_from(sorted(answer)))]
    else:
        name = draw(st.sampled_from(typed))
        types = schema["properties"][name]["type"]
        types = types if isinstance(types, list) else [types]
        answer[name] = draw(st.sampled_from([value for value in WRONG_TYPES if not has_type(value, types)]))
    return schema, answer


@given(answers())
def test_an_answer_generated_to_satisfy_a_schema_does(case):
    schema, answer = case
    assert checked_schema(schema, FIELD, strict=True).violation(answer) is None
    assert checked_schema(schema, FIELD, strict=False).violation(answer) is None


@given(broken_answers())
def test_an_answer_changed_to_break_its_schema_is_a_violation_that_never_quotes_it(case):
    schema, answer = case
    failure = checked_schema(schema, FIELD, strict=True).violation(answer)
    assert failure is not None and failure.startswith("$")
    assert SECRET not in failure


JSON_WHITESPACE = st.text(alphabet=" \t\n\r", max_size=4)


@given(st.one_of(answers(), broken_answers()), JSON_WHITESPACE, JSON_WHITESPACE, st.sampled_from([None, 0, 2]), st.booleans())
def test_the_verdict_on_an_answers_text_does_not_depend_on_its_whitespace(case, before, after, indent, ascii_only):
    schema, answer = case
    compiled = checked_schema(schema, FIELD, strict=True)
    compact = json.dumps(answer, separators=(",", ":"))
    text = before + json.dumps(answer, indent=indent, ensure_ascii=ascii_only) + after
    (value, reason), (compact_value, _) = parse_json_answer(text), parse_json_answer(compact)
    assert reason is None and value == compact_value
    assert compiled.violation(value) == compiled.violation(compact_value) == compiled.violation(answer)


KEYWORDS = ["type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs", "format",
            "minimum", "multipleOf", "minLength", "maxItems", "pattern", "description", "allOf"]
JSON_VALUES = st.recursive(
    SCALARS | st.sampled_from(["string", "object", "array", "integer", "#", "#/$defs/a", "date", "a"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYWORDS) | PLAIN_NAMES, inner, max_size=4),
    max_leaves=12,
)


@given(JSON_VALUES, JSON_VALUES, st.booleans())
def test_any_json_is_a_schema_or_a_400_and_any_answer_a_verdict(schema, answer, strict):
    try:
        compiled = checked_schema(schema, FIELD, strict=strict)
    except ApiError as error:
        assert error.status == 400 and error.param is not None
        assert error.param.startswith(FIELD) and error.param in error.message
        return
    failure = compiled.violation(answer)
    assert failure is None or failure.startswith("$")
