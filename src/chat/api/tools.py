"""Tool calling, the request side (issue 17): a request's `tools`, `tool_choice` and
`parallel_tool_calls` checked against their bounds, which models may answer it, and the
tool calls and results of a conversation's history checked and put in the shape the
binding takes. Pure Python, no I/O.

The bounds and shapes are the contract of issue 17 ("Request fields"). Every refusal is a
400 `invalid_request` naming the field, in the message and in `param`. A client's values
are never echoed: a name or an id can be anything, of any length.

Schemas are measured without recursion: in Pyodide a stack overflow is not an exception
but a fatal error that aborts the isolate, and a schema built in Python (or a body parsed
with a looser bound) must not reach one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from chat.web.errors import invalid_request
from sse import MAX_JSON_DEPTH, loads_bounded

# The contract's bounds on a request's tools.
MAX_TOOLS = 64
# 16 KiB: Codex CLI's spawn_agent tool has a description of 5,989 characters (0.171.0); all
# tools together are still held to MAX_TOOLS_BYTES.
MAX_DESCRIPTION_CHARS = 16 * 1024
MAX_PARAMETERS_BYTES = 16 * 1024  # a schema's compact JSON, UTF-8
MAX_PARAMETERS_DEPTH = 16  # arrays and objects, the schema object itself counting as 1
# All tools' compact JSON together: Claude Code 2.1.328 sends 32 KB of them, 61 KB with its
# experimental betas off (2026-12-04), before any MCP server adds its own.
MAX_TOOLS_BYTES = 256 * 1024
# ... and on the calls and results of the history.
MAX_ID_CHARS = 256
MAX_ARGUMENTS_BYTES = 256 * 1024
MAX_CALLS_PER_MESSAGE = 128

TOOL_CHOICES = ("auto", "none", "required")
# States of an AI SDK tool part that carry a result; a part in any other state
# (input-streaming, input-available, or a state of a later SDK) is left out.
UI_RESULT_STATES = ("output-available", "output-error")

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # Unicode's Cc characters
_CHOICE_SHAPE = '"auto", "none", "required" or {"type": "function", "function": {"name": ...}}'


def checked_tool_fields(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The model inputs a request's `tools`, `tool_choice` and `parallel_tool_calls` add:
    {} when it offers no tools (absent, null or []), else `{"tools": [...]}` in OpenAI's
    shape with only its known keys, plus `tool_choice` and `parallel_tool_calls` as given.

    Raises ApiError(400, invalid_request) naming the field: a bound passed, a malformed
    tool, a tool_choice that is not one of the contract's (for "any", "required"), or a
    tool_choice or parallel_tool_calls without tools.
    """
    tools = checked_tools(payload.get("tools"))
    choice = payload.get("tool_choice")
    parallel = payload.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise invalid_request("parallel_tool_calls must be true or false.", param="parallel_tool_calls")
    if not tools:
        for field, value in (("tool_choice", choice), ("parallel_tool_calls", parallel)):
            if value is not None:
                raise invalid_request(f"{field} needs tools: send the tools it applies to.", param=field)
        return {}
    inputs: dict[str, Any] = {"tools": tools}
    if choice is not None:
        inputs["tool_choice"] = checked_tool_choice(choice, [tool["function"]["name"] for tool in tools])
    if parallel is not None:
        inputs["parallel_tool_calls"] = parallel
    return inputs


def checked_tools(value: Any) -> list[dict[str, Any]]:
    """A request's `tools` in OpenAI's shape, normalized: `{"type": "function", "function":
    {"name", "description", "parameters", "strict"?}}`, unknown keys dropped, a missing
    description sent as "" and missing parameters as a schema of no arguments ([] for
    None). Raises ApiError(400) naming the field."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_request("tools must be a list of function tools.", param="tools")
    if len(value) > MAX_TOOLS:
        raise invalid_request(f"tools has {len(value)} entries; at most {MAX_TOOLS} are allowed.", param="tools")
    tools = []
    names: set[str] = set()
    for index, tool in enumerate(value):
        checked = _checked_tool(tool, f"tools[{index}]")
        name = checked["function"]["name"]
        if name in names:
            field = f"tools[{index}].function.name"
            raise invalid_request(f"{field}: another tool has this name; names must be unique.", param=field)
        names.add(name)
        tools.append(checked)
    size = json_size(tools)
    if size > MAX_TOOLS_BYTES:
        raise invalid_request(f"tools total {size} bytes as JSON; at most {MAX_TOOLS_BYTES} are allowed.", param="tools")
    return tools


def _checked_tool(tool: Any, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise invalid_request(f"{where} must be an object.", param=where)
    if tool.get("type") != "function":
        raise invalid_request(f'{where}.type must be "function".', param=f"{where}.type")
    function = tool.get("function")
    if not isinstance(function, dict):
        raise invalid_request(f"{where}.function must be an object.", param=f"{where}.function")
    name = function.get("name")
    if not isinstance(name, str) or _TOOL_NAME.fullmatch(name) is None:
        field = f"{where}.function.name"
        raise invalid_request(f"{field} must be 1 to 64 letters, digits, _ or -.", param=field)
    description = function.get("description")
    if description is None:
        description = ""
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_CHARS:
        field = f"{where}.function.description"
        raise invalid_request(f"{field} must be a string of at most {MAX_DESCRIPTION_CHARS} characters.", param=field)
    parameters = function.get("parameters")
    checked: dict[str, Any] = {
        "name": name,
        "description": description,
        # OpenAI reads a function without parameters as one of no arguments; sent spelled
        # out, as the description is, because the native models' schemas require both.
        "parameters": {"type": "object", "properties": {}} if parameters is None
        else checked_parameters(parameters, f"{where}.function.parameters"),
    }
    strict = function.get("strict")
    if strict is not None:
        if not isinstance(strict, bool):
            raise invalid_request(f"{where}.function.strict must be true or false.", param=f"{where}.function.strict")
        checked["strict"] = strict
    return {"type": "function", "function": checked}


def checked_parameters(value: Any, field: str) -> dict[str, Any]:
    """A tool's JSON Schema: a JSON object nesting at most MAX_PARAMETERS_DEPTH levels and
    at most MAX_PARAMETERS_BYTES as compact JSON. The depth is measured first, without
    recursion, so a schema of any depth is refused before anything recursive reads it.
    Raises ApiError(400) naming `field`."""
    if not isinstance(value, dict):
        raise invalid_request(f"{field} must be a JSON object (a JSON Schema).", param=field)
    if json_depth(value, MAX_PARAMETERS_DEPTH) > MAX_PARAMETERS_DEPTH:
        raise invalid_request(f"{field} nests deeper than {MAX_PARAMETERS_DEPTH} levels.", param=field)
    text = compact_json(value, field)
    numbers_fit_javascript(text, field)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PARAMETERS_BYTES:
        raise invalid_request(f"{field} is {size} bytes as JSON; at most {MAX_PARAMETERS_BYTES} are allowed.", param=field)
    return value


def checked_tool_choice(value: Any, names: Collection[str]) -> str | dict[str, Any]:
    """`tool_choice` as given (an object rebuilt with only its known keys), for a request
    whose tools are named `names`. Raises ApiError(400) naming the field; Workers AI
    refuses "any", so it is refused here with a pointer to "required"."""
    if isinstance(value, str):
        if value in TOOL_CHOICES:
            return value
        raise invalid_request(f'tool_choice must be {_CHOICE_SHAPE}; for "any", send "required".', param="tool_choice")
    function = value.get("function") if isinstance(value, dict) else None
    if not isinstance(value, dict) or value.get("type") != "function" or not isinstance(function, dict):
        raise invalid_request(f"tool_choice must be {_CHOICE_SHAPE}.", param="tool_choice")
    name = function.get("name")
    if not isinstance(name, str) or name not in names:
        raise invalid_request("tool_choice.function.name must name one of tools.", param="tool_choice.function.name")
    return {"type": "function", "function": {"name": name}}


def uses_tools(tool_inputs: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether only a model that takes tools can answer: the request offers tools, or its
    history holds calls and results (checked messages)."""
    return bool(tool_inputs) or any("tool_calls" in message or message["role"] == "tool" for message in messages)


# The history: assistant messages with tool_calls, and tool messages answering them.


def checked_identifier(value: Any, field: str) -> str:
    """A call id or a called tool's name in the history: kept as it is (never regenerated),
    so only its length and control characters are checked. Raises ApiError(400)."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID_CHARS or _CONTROL.search(value):
        raise invalid_request(f"{field} must be 1 to {MAX_ID_CHARS} characters, none of them a control character.", param=field)
    return value


def checked_arguments(value: Any, field: str) -> str:
    """A call's arguments for the binding: a string of at most MAX_ARGUMENTS_BYTES, sent
    as it is when it is a JSON object, else as "{}".

    A model may have written arguments that do not parse (the Worker passes such calls on
    with an input error, and clients send them back). vLLM, which serves Workers AI's
    OpenAI-style models, parses the arguments of earlier calls for the chat template:
    older releases fail the request on bad JSON, newer ones read it as {} (vLLM's
    entrypoints/chat_utils `_postprocess_messages`, read 2026-12-01). Sent as {} here, a
    conversation holding such a call goes on whichever release serves it; the tool's
    result (an error, as a rule) says what went wrong."""
    if not isinstance(value, str):
        raise invalid_request(f"{field} must be a string (the call's arguments as JSON).", param=field)
    size = utf8_size(value)
    if size > MAX_ARGUMENTS_BYTES:
        raise invalid_request(f"{field} is {size} bytes; at most {MAX_ARGUMENTS_BYTES} are allowed.", param=field)
    try:
        is_object = isinstance(loads_bounded(value), dict)
    except ValueError:
        is_object = False
    return value if is_object else "{}"


def checked_tool_calls(value: Any, where: str) -> list[dict[str, Any]]:
    """An assistant message's `tool_calls` (`where`: the message, as "messages[3]") in the
    binding's shape `[{"id", "type": "function", "function": {"name", "arguments"}}]`.
    A missing `type` is taken as "function". Raises ApiError(400) naming the field."""
    field = f"{where}.tool_calls"
    if not isinstance(value, list):
        raise invalid_request(f"{field} must be a list of calls.", param=field)
    if len(value) > MAX_CALLS_PER_MESSAGE:
        raise invalid_request(f"{field} has {len(value)} entries; at most {MAX_CALLS_PER_MESSAGE} are allowed.", param=field)
    calls = []
    ids: set[str] = set()
    for index, call in enumerate(value):
        at = f"{field}[{index}]"
        if not isinstance(call, dict):
            raise invalid_request(f"{at} must be an object.", param=at)
        if call.get("type", "function") != "function":
            raise invalid_request(f'{at}.type must be "function".', param=f"{at}.type")
        call_id = checked_identifier(call.get("id"), f"{at}.id")
        if call_id in ids:
            raise invalid_request(f"{at}.id: another call of this message has this id.", param=f"{at}.id")
        ids.add(call_id)
        function = call.get("function")
        if not isinstance(function, dict):
            raise invalid_request(f"{at}.function must be an object.", param=f"{at}.function")
        name = checked_identifier(function.get("name"), f"{at}.function.name")
        arguments = checked_arguments(function.get("arguments"), f"{at}.function.arguments")
        calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
    return calls


def checked_assistant_message(message: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An assistant message for the binding: `{"role": "assistant", "content": text or ""}`,
    with `tool_calls` when it has any (null and [] are none). Its content may be empty or
    null (histories from LangChain and LiteLLM hold such turns). Raises ApiError(400)."""
    content = message.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise invalid_request(f"{where}.content must be a string or null.", param=f"{where}.content")
    checked: dict[str, Any] = {"role": "assistant", "content": content}
    calls = message.get("tool_calls")
    if calls is not None and calls != []:
        checked["tool_calls"] = checked_tool_calls(calls, where)
    return checked


def call_names(message: Mapping[str, Any]) -> dict[str, str]:
    """The calls of a checked assistant message, id -> tool name: what the tool messages
    after it may answer."""
    return {call["id"]: call["function"]["name"] for call in message.get("tool_calls", ())}


def checked_tool_message(message: Mapping[str, Any], where: str, calls: Mapping[str, str]) -> dict[str, Any]:
    """A tool message for the binding: `{"role": "tool", "tool_call_id", "name", "content"}`,
    `name` being the answered call's. `calls`: those of the nearest assistant message with
    tool_calls before it (call_names), one of which it must answer. Raises ApiError(400)."""
    call_id = checked_identifier(message.get("tool_call_id"), f"{where}.tool_call_id")
    content = message.get("content")
    if not isinstance(content, str):
        raise invalid_request(f"{where}.content must be a string.", param=f"{where}.content")
    if call_id not in calls:
        field = f"{where}.tool_call_id"
        raise invalid_request(f"{field}: no call of the nearest assistant message with tool_calls before it has this id.", param=field)
    return {"role": "tool", "tool_call_id": call_id, "name": calls[call_id], "content": content}


def input_chars(message: Mapping[str, Any]) -> int:
    """What a checked message counts towards MAX_INPUT_CHARS: its content (a tool result
    included; of a list of parts, the text parts) and its calls' arguments."""
    content = message["content"]
    chars = len(content) if isinstance(content, str) else sum(len(part["text"]) for part in content if part["type"] == "text")
    for call in message.get("tool_calls", ()):
        chars += len(call["function"]["arguments"])
    return chars


# AI SDK UI messages (/api/ui-chat): tool parts.


def is_ui_tool_part(part: Mapping[str, Any]) -> bool:
    kind = part.get("type")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def ui_tool_exchange(part: Mapping[str, Any], where: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A UI tool part (`where`: the part, as "messages[2].parts[3]") as a call in the
    binding's shape and the tool message answering it; None for a part without a result
    (input-streaming, input-available, or a state this Worker does not know), which is
    left out. The name comes from `type` "tool-<name>", or `toolName` of a "dynamic-tool".

    The arguments are the input as compact JSON; for an output-error whose input the SDK
    kept raw (it failed to parse: `rawInput`, or a dynamic tool's string `input`), that
    text as it is. The result is `output` (JSON unless a string) or `errorText`.
    Raises ApiError(400) naming the field.
    """
    state = part.get("state")
    if not is_ui_tool_part(part) or state not in UI_RESULT_STATES:
        return None
    kind = part["type"]
    if kind == "dynamic-tool":
        name = checked_identifier(part.get("toolName"), f"{where}.toolName")
    else:
        name = checked_identifier(kind[len("tool-"):], f"{where}.type")
    call_id = checked_identifier(part.get("toolCallId"), f"{where}.toolCallId")
    if state == "output-available":
        arguments = compact_json(part.get("input", {}), f"{where}.input")
        output = part.get("output")
        content = output if isinstance(output, str) else compact_json(output, f"{where}.output")
    else:
        raw = part.get("input")
        if raw is None:
            raw = part.get("rawInput", {})
        arguments = raw if isinstance(raw, str) else compact_json(raw, f"{where}.input")
        error_text = part.get("errorText")
        if not isinstance(error_text, str):
            raise invalid_request(f"{where}.errorText must be a string.", param=f"{where}.errorText")
        content = error_text
    arguments = checked_arguments(arguments, f"{where}.input")
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return call, {"role": "tool", "tool_call_id": call_id, "content": content}


# JSON measures, none of them recursive in Python.


def json_depth(value: Any, limit: int) -> int:
    """How deep arrays and objects nest in `value` (a scalar: 0, `{}`: 1, as sse's
    nesting_depth counts text), walked with an explicit stack. The walk stops once it
    passes `limit` and then returns limit + 1, so a value of any depth (or a cycle built in
    Python) costs at most `limit` levels."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return limit + 1
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def compact_json(value: Any, field: str) -> str:
    """`value` as compact JSON (the characters as they are, not escaped). Its depth is
    checked first (json.dumps recurses); a non-finite number (1e400 reads as inf) is
    refused, since JSON has none. Raises ApiError(400) naming `field`."""
    if json_depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise invalid_request(f"{field} nests deeper than {MAX_JSON_DEPTH} levels.", param=field)
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise invalid_request(f"{field} holds a number out of JSON's range.", param=field) from None


def numbers_fit_javascript(text: str, field: str) -> None:
    """Refuses a schema (its compact JSON `text`) holding an integer no JavaScript number
    can be: it crosses to the binding as a number (chat.model.call), and one past the
    doubles' range has none (OverflowError; found by a review's attack, 2026-12-04).
    Raises ApiError(400) naming `field`."""
    try:
        json.loads(text, parse_int=_as_double)
    except OverflowError:
        raise invalid_request(f"{field} holds a number out of JSON's range.", param=field) from None


def _as_double(digits: str) -> float:
    return float(int(digits))


def json_size(value: Any) -> int:
    """The bytes of `value` as compact UTF-8 JSON; for values already checked (json.dumps
    recurses, so their depth must be bounded)."""
    return utf8_size(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def utf8_size(text: str) -> int:
    # A lone surrogate (JSON can carry one) counts as the 3 bytes surrogatepass gives it.
    return len(text.encode("utf-8", "surrogatepass"))
