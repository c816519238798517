"""Structured outputs, the schema side: the JSON Schema a client asks an answer to follow
(OpenAI's `response_format: {"type": "json_schema", ...}`), checked before any inference,
and a finished answer checked against it. Pure Python, no I/O.

The subset is the one OpenAI's Structured Outputs take ("Supported schemas" in its guide,
read 2026-12-02): `type` (one name or a list), `properties`, `required`,
`additionalProperties`, `items`, `enum`, `const`, `anyOf`, `$ref` to the root (`#`) or to
one of its `$defs` (or `definitions`), so a schema may be recursive; `format`; the numeric
bounds; `minItems`/`maxItems`, `minLength`/`maxLength`; `pattern`; and annotations
(`title`, `description`, `default`, `examples`, ...), which are ignored. Any other keyword
(allOf, oneOf, not, if/then/else, prefixItems, patternProperties, ...) is refused.

`pattern` is accepted but not enforced. JSON Schema's patterns are ECMA-262 regexes, which
Python's `re` reads differently or refuses; `re` backtracks, so one pattern and one string
of the model's can take exponential time with nothing to stop it; and its parser recurses
once per nested group. The model is asked to follow the pattern (the schema is passed on); the
Worker checks structure, types, bounds and formats.

Every refusal is a 400 `invalid_request` naming its place, in `param` and in the message,
as `response_format.json_schema.schema.properties.age.type`. A name that is not 1 to 64
letters, digits, _ or - (after an optional $) is given by its position instead:
`properties[#2]` is the third. So no client text of any length or character is echoed, and
a violation never quotes the answer (model output, and messages are logged).

Nothing here recurses over a schema or an answer: in Pyodide a stack overflow is not an
exception but a fatal error that aborts the isolate, and a recursive schema reaches as
deep as the answer does.
"""

from __future__ import annotations

import calendar
import dataclasses
import ipaddress
import json
import math
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any, TypeAlias

from chat.api.tools import compact_json, numbers_fit_javascript, utf8_size
from chat.web.errors import invalid_request
from sse import MAX_JSON_DEPTH, JSONDepthError, loads_bounded

# Bounds on a schema, each at or below OpenAI's for strict mode where it documents one (its
# guide, "Supported schemas", read 2026-12-02).
#
# Its compact JSON, UTF-8: as for a tool's parameters (chat.api.tools.MAX_PARAMETERS_BYTES),
# since it rides in the prompt the same way (some 4,000 tokens) and the whole body has 64
# KiB. It also keeps the text OpenAI counts apart (property and definition names, enum
# values and consts: 120,000 characters) under 16 Ki characters, so that has no bound of
# its own.
MAX_SCHEMA_BYTES = 16 * 1024
# How deep the value a schema describes nests: the schema of a property, an item or an
# additional property is one level below its holder (the root and each definition are at
# level 1); an anyOf branch describes the same value, at its holder's level. OpenAI: 10.
# The JSON of the schema itself is also bounded, by sse's MAX_JSON_DEPTH.
MAX_SCHEMA_LEVELS = 10
# The properties of all objects together. OpenAI: 5,000. An answer to a strict schema writes
# every one, and a thousand make an answer of thousands of tokens, beyond the default
# max_tokens (1,024).
MAX_SCHEMA_PROPERTIES = 1000
# The values of all enums together, OpenAI's bound: a value is compared with each of its
# enum's.
MAX_ENUM_VALUES = 1000
# $defs and definitions together. OpenAI sets none; generators write one per model class
# (pydantic) or per named type (zod-to-json-schema), and an answer's shape needs far fewer.
MAX_DEFINITIONS = 100
# A pattern is passed on, not enforced (see above). Guided decoding compiles it into an
# automaton that can grow exponentially with its length; a field's format needs a short one.
MAX_PATTERN_CHARS = 256
# Checking an answer takes at most this many steps: one value checked against one schema,
# one member of an object read with no schema to check it, one pair of values compared with
# an enum's array or object. A plain check takes a step or two per value. An answer within
# the Paid plan's default 30 s of CPU has some 90,000 to 230,000 tokens at most (re-framing costs
# 130 to 350 ms per 1,000: docs/cpu.md). Past the bound the work grows faster than the
# answer (a branch that fails late has its subtree checked again by the next, recursive
# schemas). The check runs on the isolate's one thread, so every other stream waits while
# it does: the attack of 2026-12-02 made a 164-character answer to an anyOf schema cost
# 3.6 s in workerd at 1,000,000 steps, and stalled a stream beside it. 200,000 steps is
# about 0.7 s there, and more values than a 1,000,000-character answer (check.py) holds
# in any plain shape.
MAX_CHECK_STEPS = 200_000

TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"})
# Read at the root only: every $ref points into the root's $defs, and an $id or $schema below
# the root would start a schema resource of its own, with its own references.
_ROOT_ONLY = frozenset({"$defs", "definitions", "$id", "$schema"})
_KEYWORDS = _ANNOTATIONS | _ROOT_ONLY | {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref",
    "format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems", "minLength", "maxLength",
}
_OBJECT_KEYWORDS = ("properties", "required", "additionalProperties")
# In strict mode every schema says what it allows (OpenAI refuses one without a type).
_KIND_KEYWORDS = ("type", "enum", "const", "anyOf", "$ref")
_DEFINITION_KEYWORDS = ("$defs", "definitions")

_NUMBER_TYPES = (int, float)  # with bool, which is checked before
_PLAIN_NAME = re.compile(r"\$?[A-Za-z0-9_-]{1,64}")
# Of a deeper path, only the first and last few steps are shown.
_PATH_ENDS_SHOWN = 6


def _is_plain(name: object) -> bool:
    return isinstance(name, str) and _PLAIN_NAME.fullmatch(name) is not None


def _member(place: str, name: object, position: int) -> str:
    """The place of the member `name` of the object at `place`: `.name`, or `[#position]`
    for a name that is not plain."""
    return f"{place}.{name}" if _is_plain(name) else f"{place}[#{position}]"


# Formats, as JSON Schema (draft 2020-12, "Defined Formats") defines them: RFC 3339 for dates
# and times, RFC 5321's dot-atom form for email, RFC 1123 for hostnames, RFC 4122 for UUIDs.
# Every regex is anchored by fullmatch and written in [0-9] (\d matches any Unicode digit).

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))")
# RFC 3339 Appendix A's ABNF, rule by rule: dur-date [dur-time] / dur-time / dur-week.
_DURATION_TIME = r"T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
_DURATION_DATE = r"(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)"
_DURATION = re.compile(rf"P(?:{_DURATION_DATE}(?:{_DURATION_TIME})?|{_DURATION_TIME}|[0-9]+W)")
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_ATOM = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+")
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_date(text: str) -> bool:
    match = _DATE.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.groups())
    if not 1 <= month <= 12:
        return False
    leap_day = month == 2 and calendar.isleap(year)
    return 1 <= day <= _MONTH_DAYS[month - 1] + leap_day


def _is_time(text: str) -> bool:
    # RFC 3339's full-time: the offset is required, and second 60 is a leap second.
    match = _TIME.fullmatch(text)
    if match is None:
        return False
    hour, minute, second, offset_hour, offset_minute = (int(part or 0) for part in match.groups())
    return hour <= 23 and minute <= 59 and second <= 60 and offset_hour <= 23 and offset_minute <= 59


def _is_date_time(text: str) -> bool:
    return text[10:11] in ("T", "t") and _is_date(text[:10]) and _is_time(text[11:])


def _is_hostname(text: str) -> bool:
    return 0 < len(text) <= 253 and all(_LABEL.fullmatch(label) for label in text.split("."))


def _is_email(text: str) -> bool:
    local, at, domain = text.rpartition("@")
    return (
        bool(at) and len(text) <= 254 and 0 < len(local) <= 64
        and all(_ATOM.fullmatch(atom) for atom in local.split(".")) and _is_hostname(domain)
    )


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)  # four decimal octets, no leading zeros
    except ValueError:
        return False
    return True


def _is_ipv6(text: str) -> bool:
    if "%" in text:  # a zone (fe80::1%eth0) is not RFC 4291's text form
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _is_date_time,
    "time": _is_time,
    "date": _is_date,
    "duration": lambda text: _DURATION.fullmatch(text) is not None,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "uuid": lambda text: _UUID.fullmatch(text) is not None,
}
FORMATS = tuple(_FORMATS)


# A schema, compiled.


def _scalar_key(value: object) -> tuple[str, object] | None:
    # JSON's equality for scalars: 1 and 1.0 are the same number (and Python hashes them
    # alike), true is not 1. None for what is not a JSON scalar.
    if value is None or isinstance(value, bool | str):
        return (type(value).__name__, value)
    if isinstance(value, _NUMBER_TYPES):
        return ("number", value)
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Choices:
    """The values an enum or a const allows: the scalars by their _scalar_key, arrays and
    objects as they are (compared member by member)."""

    scalars: frozenset[tuple[str, object]]
    containers: tuple[list[Any] | dict[str, Any], ...]

    @classmethod
    def of(cls, values: Sequence[Any]) -> _Choices:
        keys = (_scalar_key(value) for value in values)
        return cls(
            scalars=frozenset(key for key in keys if key is not None),
            containers=tuple(value for value in values if isinstance(value, list | dict)),
        )


@dataclasses.dataclass(slots=True)
class _Node:
    """One schema object, compiled: its keywords as fields, its subschemas as indexes into the
    list of nodes (so a recursive schema is a graph, not a tree). A node with `ref` has no
    other checks."""

    ref: int | None = None
    types: tuple[str, ...] = ()  # in TYPES' order; () allows any
    enum: _Choices | None = None
    const: _Choices | None = None
    any_of: tuple[int, ...] = ()
    # name -> (node, the path step of a member of that name: ".name", or None for a name
    # that is not plain, which is shown by its position in the answer)
    properties: dict[str, tuple[int, str | None]] = dataclasses.field(default_factory=dict)
    required: tuple[str, ...] = ()
    closed: bool = False  # additionalProperties: false
    additional: int | None = None  # additionalProperties: a schema
    items: int | None = None
    minimum: int | float | None = None
    exclusive_minimum: int | float | None = None
    maximum: int | float | None = None
    exclusive_maximum: int | float | None = None
    multiple_of: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    format: str | None = None


def checked_schema(schema: object, field: str, *, strict: bool) -> CompiledSchema:
    """The client's JSON Schema `schema`, found at `field` (as
    "response_format.json_schema.schema"), checked and compiled for CompiledSchema.violation.

    `strict` (json_schema.strict) adds OpenAI's strict rules: the root is `"type": "object"`
    (not anyOf or $ref), every object has `additionalProperties: false` and lists all its properties
    in `required`, and every schema says what it allows (a type, enum, const, anyOf or $ref).
    Without it the schema is only bounded and checked to be well formed: the model is asked
    to follow it, and the Worker holds the answer only to being JSON.

    Raises ApiError(400, invalid_request) naming the place: a bound passed, a keyword outside
    the subset or malformed, a $ref to no definition or one that comes back to itself through
    $ref and anyOf alone, a strict rule broken.
    """
    if not isinstance(schema, dict):
        raise invalid_request(f"{field} must be a JSON Schema (an object).", param=field)
    # compact_json measures the depth first, without recursion (json.dumps recurses), and
    # refuses a number JSON cannot carry (1e400 reads as inf).
    text = compact_json(schema, field)
    numbers_fit_javascript(text, field)
    size = utf8_size(text)
    if size > MAX_SCHEMA_BYTES:
        raise invalid_request(f"{field} is {size} bytes as JSON; at most {MAX_SCHEMA_BYTES} are allowed.", param=field)
    return _Compiler(strict=strict).compiled(schema, field)


class _Compiler:
    """One walk over a schema with an explicit work list: every schema object becomes a
    _Node, and the counts the bounds need are kept on the way."""

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self.nodes: list[_Node] = []
        self.places: list[str] = []
        # Schemas waiting for their node, first come first served: so the first refusal is the
        # first in the schema's order, level by level.
        self.pending: deque[tuple[dict[str, Any], int, int]] = deque()  # schema, its node, its level
        self.refs: list[tuple[int, str]] = []  # a node with $ref, the reference
        self.definitions: dict[tuple[str, str], int] = {}  # ("$defs", name) -> node
        self.property_count = 0
        self.enum_value_count = 0

    def compiled(self, root: dict[str, Any], field: str) -> CompiledSchema:
        self.subschema(root, field, 1)
        while self.pending:
            schema, index, level = self.pending.popleft()
            self.nodes[index] = self.node(schema, index, level)
        for index, ref in self.refs:
            self.nodes[index].ref = self.target(ref, self.places[index])
        looping = _looping_node(self.nodes)
        if looping is not None:
            place = self.places[looping]
            raise invalid_request(
                f"{place} comes back to itself through $ref and anyOf alone, without going into a property or an item: "
                "checking a value against it would never end.", param=place)
        return CompiledSchema(tuple(self.nodes), strict=self.strict)

    def subschema(self, schema: object, place: str, level: int) -> int:
        """A node for `schema`, filled in when the work list reaches it."""
        if not isinstance(schema, dict):
            raise invalid_request(f"{place} must be a schema (an object).", param=place)
        if level > MAX_SCHEMA_LEVELS:
            raise invalid_request(f"{place} nests deeper than {MAX_SCHEMA_LEVELS} levels.", param=place)
        self.nodes.append(_Node())
        self.places.append(place)
        self.pending.append((schema, len(self.nodes) - 1, level))
        return len(self.nodes) - 1

    def node(self, schema: dict[str, Any], index: int, level: int) -> _Node:
        place = self.places[index]
        is_root = index == 0
        for position, keyword in enumerate(schema):
            if keyword not in _KEYWORDS:
                at = _member(place, keyword, position)
                raise invalid_request(
                    f"{at}: this keyword is not supported; a schema takes the subset of JSON Schema of OpenAI's structured outputs.",
                    param=at)
            if keyword in _ROOT_ONLY and not is_root:
                raise invalid_request(f"{place}.{keyword}: only the root schema may hold {keyword}.", param=f"{place}.{keyword}")
        if self.strict and not any(keyword in schema for keyword in _KIND_KEYWORDS):
            raise invalid_request(f"{place} must say what it allows in strict mode: a type, enum, const, anyOf or $ref.", param=place)
        if is_root:
            self.add_definitions(schema, place)
        node = _Node(types=_types(schema, place))
        if self.strict and is_root and (node.types != ("object",) or "anyOf" in schema or "$ref" in schema):
            raise invalid_request(f'{place} must be "type": "object" in strict mode (not anyOf, $ref or another type).', param=place)
        if "$ref" in schema:
            self.add_ref(schema, index)
            return node
        if "object" in node.types or any(keyword in schema for keyword in _OBJECT_KEYWORDS):
            self.add_object_keywords(schema, place, level, node)
        if "items" in schema:
            if isinstance(schema["items"], list):
                raise invalid_request(f"{place}.items must be one schema; a list of them (a tuple) is not supported.", param=f"{place}.items")
            node.items = self.subschema(schema["items"], f"{place}.items", level + 1)
        if "anyOf" in schema:
            branches = schema["anyOf"]
            if not isinstance(branches, list) or not branches:
                raise invalid_request(f"{place}.anyOf must be a non-empty list of schemas.", param=f"{place}.anyOf")
            node.any_of = tuple(self.subschema(branch, f"{place}.anyOf[{i}]", level) for i, branch in enumerate(branches))
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise invalid_request(f"{place}.enum must be a non-empty list of values.", param=f"{place}.enum")
            self.enum_value_count += len(values)
            if self.enum_value_count > MAX_ENUM_VALUES:
                raise invalid_request(f"{place}.enum: the schema has more than {MAX_ENUM_VALUES} enum values in all.", param=f"{place}.enum")
            node.enum = _Choices.of(values)
        if "const" in schema:
            node.const = _Choices.of([schema["const"]])
        node.minimum = _number(schema, "minimum", place)
        node.exclusive_minimum = _number(schema, "exclusiveMinimum", place)
        node.maximum = _number(schema, "maximum", place)
        node.exclusive_maximum = _number(schema, "exclusiveMaximum", place)
        node.multiple_of = _number(schema, "multipleOf", place)
        if node.multiple_of is not None and node.multiple_of <= 0:
            raise invalid_request(f"{place}.multipleOf must be greater than 0.", param=f"{place}.multipleOf")
        node.min_length = _count(schema, "minLength", place)
        node.max_length = _count(schema, "maxLength", place)
        node.min_items = _count(schema, "minItems", place)
        node.max_items = _count(schema, "maxItems", place)
        if "format" in schema:
            if not isinstance(schema["format"], str) or schema["format"] not in _FORMATS:
                raise invalid_request(f"{place}.format must be one of {', '.join(FORMATS)}.", param=f"{place}.format")
            node.format = schema["format"]
        pattern = schema.get("pattern", "")
        if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_CHARS:
            raise invalid_request(f"{place}.pattern must be a string of at most {MAX_PATTERN_CHARS} characters.", param=f"{place}.pattern")
        return node

    def add_ref(self, schema: dict[str, Any], index: int) -> None:
        place = self.places[index]
        for keyword in schema:
            if keyword != "$ref" and keyword not in _ANNOTATIONS and keyword not in _ROOT_ONLY:
                at = f"{place}.{keyword}"
                raise invalid_request(f"{at}: a schema with $ref holds nothing else but annotations.", param=at)
        if not isinstance(schema["$ref"], str):
            raise invalid_request(f"{place}.$ref must be a string.", param=f"{place}.$ref")
        self.refs.append((index, schema["$ref"]))

    def add_definitions(self, root: dict[str, Any], place: str) -> None:
        count = 0
        for keyword in _DEFINITION_KEYWORDS:
            definitions = root.get(keyword, {})
            if not isinstance(definitions, dict):
                raise invalid_request(f"{place}.{keyword} must be an object of schemas.", param=f"{place}.{keyword}")
            count += len(definitions)
            if count > MAX_DEFINITIONS:
                raise invalid_request(f"{place}.{keyword}: at most {MAX_DEFINITIONS} definitions are allowed.", param=f"{place}.{keyword}")
            for position, (name, definition) in enumerate(definitions.items()):
                self.definitions[keyword, name] = self.subschema(definition, _member(f"{place}.{keyword}", name, position), 1)

    def add_object_keywords(self, schema: dict[str, Any], place: str, level: int, node: _Node) -> None:
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise invalid_request(f"{place}.properties must be an object of schemas.", param=f"{place}.properties")
        self.property_count += len(properties)
        if self.property_count > MAX_SCHEMA_PROPERTIES:
            raise invalid_request(
                f"{place}.properties: the schema has more than {MAX_SCHEMA_PROPERTIES} properties in all.", param=f"{place}.properties")
        for position, (name, subschema) in enumerate(properties.items()):
            step = f".{name}" if _is_plain(name) else None
            node.properties[name] = (self.subschema(subschema, _member(f"{place}.properties", name, position), level + 1), step)
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
            raise invalid_request(f"{place}.required must be a list of property names.", param=f"{place}.required")
        listed: set[str] = set()
        for i, name in enumerate(required):
            if name in listed:
                raise invalid_request(f"{place}.required[{i}] names a property listed before it.", param=f"{place}.required[{i}]")
            listed.add(name)
        node.required = tuple(required)
        additional = schema.get("additionalProperties", True)
        if self.strict:
            self.check_strict_object(place, properties, required, additional)
        if isinstance(additional, bool):
            node.closed = not additional
        elif isinstance(additional, dict):
            node.additional = self.subschema(additional, f"{place}.additionalProperties", level + 1)
        else:
            at = f"{place}.additionalProperties"
            raise invalid_request(f"{at} must be true, false or a schema.", param=at)

    def check_strict_object(self, place: str, properties: dict[str, Any], required: list[str], additional: object) -> None:
        if additional is not False:
            at = f"{place}.additionalProperties"
            raise invalid_request(f"{at} must be false in strict mode: every object lists all it may hold.", param=at)
        listed = set(required)
        for position, name in enumerate(properties):
            if name not in listed:
                missing = _member(f"{place}.properties", name, position)
                raise invalid_request(f"{place}.required must list every property in strict mode; {missing} is not in it.",
                                      param=f"{place}.required")
        for i, name in enumerate(required):
            if name not in properties:
                at = f"{place}.required[{i}]"
                raise invalid_request(f"{at} names no property of this object; in strict mode required lists exactly its properties.",
                                      param=at)

    def target(self, ref: str, place: str) -> int:
        if ref == "#":
            return 0
        at = f"{place}.$ref"
        for keyword in _DEFINITION_KEYWORDS:
            prefix = f"#/{keyword}/"
            if ref.startswith(prefix) and "/" not in ref[len(prefix):]:
                # A JSON Pointer step (RFC 6901): ~1 stands for /, then ~0 for ~.
                name = ref[len(prefix):].replace("~1", "/").replace("~0", "~")
                if (keyword, name) not in self.definitions:
                    raise invalid_request(f"{at} names no definition in the root's {keyword}.", param=at)
                return self.definitions[keyword, name]
        raise invalid_request(f'{at} must be "#", "#/$defs/<name>" or "#/definitions/<name>"; other references are not supported.',
                              param=at)


def _types(schema: dict[str, Any], place: str) -> tuple[str, ...]:
    value = schema.get("type", [])
    names = [value] if isinstance(value, str) else value
    if (
        not isinstance(names, list) or ("type" in schema and not names)
        or not all(isinstance(name, str) and name in TYPES for name in names) or len(set(names)) < len(names)
    ):
        raise invalid_request(f"{place}.type must be one of {', '.join(TYPES)}, or a list of them without repeats.",
                              param=f"{place}.type")
    return tuple(name for name in TYPES if name in names)


def _number(schema: dict[str, Any], keyword: str, place: str) -> int | float | None:
    if keyword not in schema:
        return None
    value = schema[keyword]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid_request(f"{place}.{keyword} must be a number.", param=f"{place}.{keyword}")
    return value


def _count(schema: dict[str, Any], keyword: str, place: str) -> int | None:
    if keyword not in schema:
        return None
    value = schema[keyword]
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON Schema: 2.0 is an integer
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid_request(f"{place}.{keyword} must be a non-negative integer.", param=f"{place}.{keyword}")
    return value


def _looping_node(nodes: Sequence[_Node]) -> int | None:
    """A node that comes back to itself through $ref and anyOf alone, or None. Both lead to a
    schema for the same value, so such a loop never reads further into the answer and a
    check would go round it forever. Depth first, with an explicit stack."""
    done = [False] * len(nodes)
    on_path = [False] * len(nodes)

    def same_value_schemas(index: int) -> Iterator[int]:
        node = nodes[index]
        return iter(node.any_of if node.ref is None else (node.ref,))

    for start in range(len(nodes)):
        if done[start]:
            continue
        on_path[start] = True
        stack = [(start, same_value_schemas(start))]
        while stack:
            index, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                stack.pop()
                on_path[index], done[index] = False, True
            elif on_path[target]:
                return index
            elif not done[target]:
                on_path[target] = True
                stack.append((target, same_value_schemas(target)))
    return None


# Checking an answer.

# A place in the answer, built as the check goes down and rendered only for a violation:
# (the place holding it, the step from there: an item's index, ".name" or "[#3]"), None for
# the root.
_Path: TypeAlias = "tuple[_Path, int | str] | None"
_Task: TypeAlias = "tuple[object, int, _Path]"  # a value, the node it must satisfy, its place
# A violation: where, and what. Rendered only once it is the answer's: the failures of anyOf
# branches tried in turn are many, and rendering each would cost its depth.
_Failure: TypeAlias = "tuple[_Path, str]"


class CompiledSchema:
    """A schema checked_schema took, ready to check answers. `strict`: it was checked with
    OpenAI's strict rules."""

    __slots__ = ("_nodes", "strict")

    def __init__(self, nodes: tuple[_Node, ...], *, strict: bool) -> None:
        self._nodes = nodes
        self.strict = strict

    def violation(self, instance: object) -> str | None:
        """None when `instance` (a JSON value as json.loads gives it) satisfies the schema,
        else the first violation found: its place and what is wrong, as
        `$.items[3].age: expected integer`, never the answer's values. A member whose name is
        not plain is shown by its position in its object, `[#2]`.

        JSON's rules: true and false are not numbers, 3.0 is an integer, and enum and const
        compare 1 and 1.0 as equal but not true and 1. `pattern` is not enforced. A check
        needing more than MAX_CHECK_STEPS steps reports the answer as too large to check.
        Never recurses, whatever the depth of the answer or of a recursive schema."""
        return _Check(self._nodes).first_violation(instance)


class _OutOfSteps(Exception):
    pass


@dataclasses.dataclass(slots=True)
class _Frame:
    """Checks that must all hold: those of the whole answer (the first frame), or those of one
    branch of an anyOf being tried (`branch` of `branches`, for `instance` at `path`)."""

    tasks: list[_Task]
    instance: object = None
    path: _Path = None
    branches: tuple[int, ...] = ()
    branch: int = 0


class _Check:
    """One check of an answer: a stack of frames, each a stack of tasks. A task that fails
    abandons its frame; a failed anyOf branch makes way for the next, and once none is left
    the anyOf has failed in the frame below."""

    def __init__(self, nodes: tuple[_Node, ...]) -> None:
        self.nodes = nodes
        self.steps_left = MAX_CHECK_STEPS

    def spend(self, steps: int) -> None:
        self.steps_left -= steps
        if self.steps_left < 0:
            raise _OutOfSteps

    def first_violation(self, instance: object) -> str | None:
        frames = [_Frame([(instance, 0, None)])]
        try:
            while frames:
                frame = frames[-1]
                if not frame.tasks:  # all held: the answer, or a branch that matched
                    frames.pop()
                    continue
                value, index, path = frame.tasks.pop()
                failure = self.visit(value, index, path, frame.tasks, frames)
                while failure is not None:
                    failed = frames.pop()
                    if failed.branch + 1 < len(failed.branches):
                        failed.branch += 1
                        failed.tasks = [(failed.instance, failed.branches[failed.branch], failed.path)]
                        frames.append(failed)
                        failure = None
                    elif not frames:  # the first frame: the answer itself
                        place, what = failure
                        return f"{_rendered(place)}: {what}"
                    else:  # an anyOf with no branch left, which fails the frame below
                        failure = (failed.path, f"matches none of the {len(failed.branches)} schemas of anyOf")
        except _OutOfSteps:
            return f"$: too large to check (more than {MAX_CHECK_STEPS} steps)"
        return None

    def visit(self, value: object, index: int, path: _Path, tasks: list[_Task], frames: list[_Frame]) -> _Failure | None:
        """Checks `value` against node `index`: its own keywords at once, its members, items,
        $ref and anyOf as more tasks and frames. The violation, or None."""
        self.steps_left -= 1  # spend(1), inline: this runs once a value
        if self.steps_left < 0:
            raise _OutOfSteps
        node = self.nodes[index]
        if node.ref is not None:
            tasks.append((value, node.ref, path))
            return None
        failure = self.own_failure(value, node, path, tasks)
        if failure is None and node.any_of:
            frames.append(_Frame([(value, node.any_of[0], path)], value, path, node.any_of))
        return failure

    def own_failure(self, value: object, node: _Node, path: _Path, tasks: list[_Task]) -> _Failure | None:
        """The violation of `node`'s own keywords, or None; members and items are pushed as
        tasks."""
        reason = None
        if node.types and not _has_type(value, node.types):
            reason = f"expected {' or '.join(node.types)}"
        elif node.enum is not None and not self.among(value, node.enum):
            reason = "not one of the enum's values"
        elif node.const is not None and not self.among(value, node.const):
            reason = "not the const value"
        elif isinstance(value, bool) or value is None:
            pass
        elif isinstance(value, _NUMBER_TYPES):
            reason = _number_failure(value, node)
        elif isinstance(value, str):
            reason = _string_failure(value, node)
        elif isinstance(value, list):
            reason = self.array_failure(value, node, path, tasks)
        elif isinstance(value, dict):
            return self.object_failure(value, node, path, tasks)
        return None if reason is None else (path, reason)

    def array_failure(self, value: list[Any], node: _Node, path: _Path, tasks: list[_Task]) -> str | None:
        if node.min_items is not None and len(value) < node.min_items:
            return "fewer items than minItems"
        if node.max_items is not None and len(value) > node.max_items:
            return "more items than maxItems"
        if node.items is not None:
            items = node.items
            tasks.extend([(value[i], items, (path, i)) for i in range(len(value) - 1, -1, -1)])
        return None

    def object_failure(self, value: dict[Any, Any], node: _Node, path: _Path, tasks: list[_Task]) -> _Failure | None:
        for position, name in enumerate(node.required):
            if name not in value:
                shown = name if _is_plain(name) else f"that required[{position}] names"
                return path, f"missing the required property {shown}"
        members: list[_Task] = []
        for position, (name, member) in enumerate(value.items()):
            if name in node.properties:
                child, step = node.properties[name]
                members.append((member, child, (path, step or f"[#{position}]")))
            elif node.closed:
                return (path, f"[#{position}]"), "a property the schema does not allow (additionalProperties is false)"
            elif node.additional is not None:
                members.append((member, node.additional, (path, f"[#{position}]")))
        self.spend(len(value) - len(members))  # those checked spend their own
        tasks.extend(reversed(members))
        return None

    def among(self, value: object, choices: _Choices) -> bool:
        if isinstance(value, list | dict):
            return any(self.equal(value, container) for container in choices.containers)
        return _scalar_key(value) in choices.scalars

    def equal(self, left: object, right: object) -> bool:
        """JSON's equality of two values, pair by pair with an explicit stack."""
        pairs = [(left, right)]
        while pairs:
            self.spend(1)
            a, b = pairs.pop()
            if isinstance(a, list):
                if not isinstance(b, list) or len(a) != len(b):
                    return False
                pairs.extend(zip(a, b, strict=True))
            elif isinstance(a, dict):
                if not isinstance(b, dict) or a.keys() != b.keys():
                    return False
                pairs.extend((a[key], b[key]) for key in a)
            elif isinstance(b, list | dict) or _scalar_key(a) is None or _scalar_key(a) != _scalar_key(b):
                return False
        return True


def _has_type(value: object, types: tuple[str, ...]) -> bool:
    if value is None:
        kind = "null"
    elif isinstance(value, bool):
        kind = "boolean"
    elif isinstance(value, int):
        kind = "integer"
    elif isinstance(value, float):
        kind = "integer" if value.is_integer() else "number"  # JSON Schema: 3.0 is an integer
    elif isinstance(value, str):
        kind = "string"
    elif isinstance(value, list):
        kind = "array"
    elif isinstance(value, dict):
        kind = "object"
    else:
        return False
    return kind in types or (kind == "integer" and "number" in types)


def _number_failure(value: int | float, node: _Node) -> str | None:
    if node.minimum is not None and value < node.minimum:
        return "less than minimum"
    if node.exclusive_minimum is not None and value <= node.exclusive_minimum:
        return "not greater than exclusiveMinimum"
    if node.maximum is not None and value > node.maximum:
        return "greater than maximum"
    if node.exclusive_maximum is not None and value >= node.exclusive_maximum:
        return "not less than exclusiveMaximum"
    if node.multiple_of is not None and not _is_multiple(value, node.multiple_of):
        return "not a multiple of multipleOf"
    return None


def _is_multiple(value: int | float, divisor: int | float) -> bool:
    if isinstance(value, float) and not math.isfinite(value):  # 1e400 reads as inf
        return False
    return (_exact(value) / _exact(divisor)).denominator == 1


def _exact(number: int | float) -> Fraction:
    # A float as the decimal its JSON spelled (the shortest repr: 0.1, not the binary fraction
    # nearest it), so 0.3 is a multiple of 0.1 as the text says.
    return Fraction(repr(number)) if isinstance(number, float) else Fraction(number)


def _string_failure(value: str, node: _Node) -> str | None:
    # Lengths in characters (code points), as JSON Schema counts them.
    if node.min_length is not None and len(value) < node.min_length:
        return "shorter than minLength"
    if node.max_length is not None and len(value) > node.max_length:
        return "longer than maxLength"
    if node.format is not None and not _FORMATS[node.format](value):
        return f"not a valid {node.format}"
    return None


def _rendered(path: _Path) -> str:
    steps: list[str] = []
    while path is not None:
        path, step = path
        steps.append(f"[{step}]" if isinstance(step, int) else step)
    steps.reverse()
    if len(steps) > 2 * _PATH_ENDS_SHOWN:
        steps[_PATH_ENDS_SHOWN:-_PATH_ENDS_SHOWN] = [f"[... {len(steps) - 2 * _PATH_ENDS_SHOWN} steps ...]"]
    return "$" + "".join(steps)


# The answer's text.


def parse_json_answer(text: str) -> tuple[object, str | None]:
    """A finished answer's text read as JSON, as a client's json.loads would read it:
    (the value, None), or (None, why not). JSON's whitespace around it is fine.

    An answer wrapped in a Markdown fence (```json ... ```) is not JSON: some models write one
    in JSON mode, and a client parsing the answer would fail on it, so it is reported as it
    is rather than unwrapped here. The reasons never quote the text. Parsed with sse's
    depth-bounded parser (MAX_JSON_DEPTH levels)."""
    if not text.strip(" \t\n\r"):
        return None, "the answer is empty"
    if text.lstrip(" \t\n\r").startswith("```"):
        return None, "the answer is wrapped in a Markdown code fence, not bare JSON"
    try:
        return loads_bounded(text), None
    except JSONDepthError:
        return None, f"the answer nests deeper than {MAX_JSON_DEPTH} levels"
    except json.JSONDecodeError as error:
        return None, f"the answer is not JSON: {error.msg} at line {error.lineno}, column {error.colno}"
    except ValueError:
        return None, "the answer holds an integer too long to read"
