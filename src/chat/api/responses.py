"""OpenAI's Responses API, the request side (docs/openai.md, "The Responses API"): a
`POST /v1/responses` body checked before any inference and turned into the same ChatTurn
every surface hands on. Pure Python.

The input items become chat messages: `instructions` and `system`/`developer` messages
are system messages; a user message's `input_text` and `input_image` parts are its text
and image parts; `function_call` items join the assistant message before them as its
tool calls, and each `function_call_output` is the tool message answering one. `reasoning`
items are left out: no Workers AI model takes its earlier thinking back (and an encrypted
one could not be read). A function tool is offered as it is; the tools of a `namespace`
are offered as `<namespace>__<name>`, and the model's calls of them go back to the client
with `namespace` and `name` apart. Hosted tools (web search, file search, ...) run on
OpenAI's servers: they are left out and documented, so a client that offers one (Codex
CLI offers web search) is still answered. What the Worker cannot do and a client would
rely on (conversations, prompt templates, truncation) is a 400 naming the field.

`store: true` keeps the response, and `background: true` runs it without its client, in
a Durable Object (chat.resumable). `previous_response_id` is resolved before these checks:
the stored input and output come first in `input` (`continued`), and the whole is checked
as one request.

Checks are the chat surfaces' own (chat.api.validation, chat.api.tools); a refusal names
the field as the client sent it (`input[3].content[1]`, `tools[2].parameters`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from chat.api import tools as tool_checks
from chat.api.openai import flag, model_options, streaming
from chat.api.validation import WHITESPACE, checked_max_tokens, checked_turn
from chat.config import Config
from chat.turn import ChatTurn, OutputFormat
from chat.web.errors import ApiError, invalid_request
from sse import MAX_STORED_HEAD_BYTES, portable_json

MAX_METADATA_PAIRS = 16  # OpenAI's bounds on metadata
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 512
MAX_CACHE_KEY_CHARS = 256
NAMESPACE_SEPARATOR = "__"

# Tools OpenAI runs itself: none of them exists here, so they are not offered to the model.
HOSTED_TOOLS = frozenset({
    "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11", "file_search",
    "code_interpreter", "image_generation", "computer", "computer_use_preview", "mcp", "tool_search",
    "programmatic_tool_calling", "local_shell", "shell", "apply_patch", "custom",
})


@dataclass(frozen=True, kw_only=True)
class ResponsesRequest:
    """A checked Responses request: the turn, how to answer, and what the Response object
    repeats of the request. `names` maps a namespace tool's name as the model knows it to
    its (namespace, name)."""

    turn: ChatTurn
    stream: bool
    obfuscation: bool
    echo: Mapping[str, Any]
    names: Mapping[str, tuple[str, str]]
    reasoning_summary: bool  # the client asked for a summary of the reasoning
    store: bool  # kept for RESUME_TTL_S (chat.resumable), readable by its id
    background: bool  # runs without its client (stored)
    input_items: list[Any]  # the input as it was read (`kept_items`): what a stored response keeps for a previous_response_id


def validate_responses(payload: Any, config: Config) -> ResponsesRequest:
    """The request in `payload`, or ApiError: 400 naming the field (in the message and in
    `param`), `previous_response_not_found` for a `previous_response_id` (nothing is
    stored yet), 404 `model_not_found` for a model not served here."""
    if not isinstance(payload, dict):
        raise invalid_request("The request body must be a JSON object.")
    _refuse_what_cannot_be_honoured(payload)
    offered, names, where_tool, namespaces = _checked_tools(payload.get("tools"))
    messages, position, part_name = _messages(payload, config, names)
    choice = _tool_choice(payload.get("tool_choice"), offered, names)
    output = _response_format(payload.get("text"))
    reasoning = payload.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, dict):
        raise invalid_request("reasoning must be an object.", param="reasoning")
    parallel = payload.get("parallel_tool_calls")
    if not offered:
        # Nothing to call (no tools, or hosted ones only, left out): "auto", "none" and
        # parallel_tool_calls ask nothing of it (the Agents SDK sends tool_choice without
        # tools). "required" or a named tool cannot be honoured: a 400, as on Chat Completions.
        choice = None if choice in ("auto", "none") else choice
        parallel = None if isinstance(parallel, bool) else parallel
    chat_payload = {
        "model": payload.get("model"), "temperature": payload.get("temperature"),
        "tools": offered or None, "tool_choice": choice, "parallel_tool_calls": parallel,
        "reasoning_effort": (reasoning or {}).get("effort"), "response_format": output,
    }
    max_tokens = checked_max_tokens(payload.get("max_output_tokens"), config, "max_output_tokens")
    try:
        turn = checked_turn(chat_payload, messages, config, position=position, system=True, model_required=True,
                            max_tokens=max_tokens, part_name=part_name, field="input", counted="items")
    except ApiError as error:
        raise _renamed(error, where_tool) from None
    top_p = payload.get("top_p")
    turn = replace(turn, options=model_options({"top_p": top_p}, turn.models[0]), cache_key=_cache_key(payload.get("prompt_cache_key")))
    stream, options = streaming(payload)
    background = flag(payload, "background")
    # Stored unless told not to, as on OpenAI's API: the AI SDK's openai() sends no `store`
    # and, counting on that default, refers to its earlier items by id (docs/openai.md).
    store = flag(payload, "store", default=True) or background
    if background and payload.get("store") is False:
        raise invalid_request("background: a background response is stored; store must not be false.", param="background")
    summary = _summary(reasoning)
    # What the Response repeats of the request: only what was checked, in OpenAI's shapes
    # (the SDKs validate it), and the tools as the model was offered them.
    echo = {
        "instructions": payload.get("instructions"), "max_output_tokens": payload.get("max_output_tokens"),
        "metadata": checked_metadata(payload.get("metadata")), "parallel_tool_calls": turn.tool_inputs.get("parallel_tool_calls", True),
        "temperature": turn.temperature, "top_p": top_p, "tool_choice": _echoed_choice(turn.tool_inputs.get("tool_choice"), names),
        "tools": _echoed_tools(turn.tool_inputs.get("tools", []), names, namespaces),
        "text": {"format": {"type": "text"} if turn.output is None else _echoed_format(turn.output)},
        "reasoning": {"effort": turn.reasoning_effort, "summary": (reasoning or {}).get("summary") if summary else None},
        "store": store, "truncation": "disabled",
    }
    if store:
        head = len(portable_json(echo).encode())  # as the object will keep it (a lone surrogate escaped)
        if head > MAX_STORED_HEAD_BYTES and payload.get("store") is None and not background:
            # Stored by default only: too large to keep, it is answered without, and says so.
            store = False
            echo["store"] = False
        elif head > MAX_STORED_HEAD_BYTES:
            # Every event that carries the Response object repeats them (sse.MAX_STORED_HEAD_BYTES).
            raise invalid_request(f"store: a stored response keeps its instructions, tools and metadata in {MAX_STORED_HEAD_BYTES} "
                                  f"bytes at most; this request's take {head}. Send it with store: false.", param="store")
    return ResponsesRequest(turn=turn, stream=stream, obfuscation=flag(options, "include_obfuscation", "stream_options.", default=True),
                            echo=echo, names=names, reasoning_summary=summary, store=store, background=background,
                            input_items=kept_items(payload["input"]))


def _refuse_what_cannot_be_honoured(payload: dict[str, Any]) -> None:
    if payload.get("previous_response_id") is not None:
        # The Worker resolves it first (`continued`): one left here was never looked up.
        raise ApiError("previous_response_not_found", param="previous_response_id")
    if payload.get("conversation") is not None:
        # Likewise (chat.resumable.client.with_stored_items).
        raise ApiError("conversation_not_found", param="conversation")
    for field, reason in (
        ("prompt", "prompt templates are not kept here; send instructions and input"),
    ):
        value = payload.get(field)
        if value is not None and value is not False:
            raise invalid_request(f"{field}: {reason}.", param=field)
    truncation = payload.get("truncation")
    if truncation is not None and truncation != "disabled":
        raise invalid_request('truncation: only "disabled" is supported here; the Worker never drops part of a conversation.',
                              param="truncation")
    for field in ("store", "background"):
        value = payload.get(field)
        if value is not None and not isinstance(value, bool):
            raise invalid_request(f"{field} must be true or false.", param=field)
    include = payload.get("include")
    if include is not None and (not isinstance(include, list) or len(include) > 16 or not all(isinstance(v, str) for v in include)):
        raise invalid_request("include must be a list of at most 16 strings.", param="include")


# --- tools ------------------------------------------------------------------------------------


def _checked_tools(value: Any) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]], dict[int, str], dict[str, str]]:
    """The function tools to offer, in the chat shape chat.api.tools checks; the names of
    namespace tools; each offered tool's place in the request (for refusals); and each
    namespace's description."""
    if value is None:
        return [], {}, {}, {}
    if not isinstance(value, list):
        raise invalid_request("tools must be a list of tools.", param="tools")
    if len(value) > tool_checks.MAX_TOOLS:
        raise invalid_request(f"tools has {len(value)} entries; at most {tool_checks.MAX_TOOLS} are allowed.", param="tools")
    offered: list[dict[str, Any]] = []
    names: dict[str, tuple[str, str]] = {}
    where: dict[int, str] = {}
    namespaces: dict[str, str] = {}

    def offer(tool: dict[str, Any], at: str, name: Any) -> None:
        where[len(offered)] = at
        offered.append({"type": "function", "function": {"name": name, "description": tool.get("description"),
                                                         "parameters": tool.get("parameters"), "strict": tool.get("strict")}})

    for index, tool in enumerate(value):
        at = f"tools[{index}]"
        kind = tool.get("type") if isinstance(tool, dict) else None
        if not isinstance(kind, str):
            raise invalid_request(f"{at} must be an object with a type.", param=f"{at}.type")
        if kind == "function":
            offer(tool, at, tool.get("name"))
        elif kind == "namespace":
            namespace, description, inner = tool.get("name"), tool.get("description"), tool.get("tools")
            if not isinstance(namespace, str) or not _NAME.fullmatch(namespace) or namespace in namespaces:
                raise invalid_request(f"{at}.name must be 1 to 64 letters, digits, _ or -, and another namespace's.", param=f"{at}.name")
            if not isinstance(description, str) or len(description) > tool_checks.MAX_DESCRIPTION_CHARS:
                raise invalid_request(f"{at}.description must be a string of at most {tool_checks.MAX_DESCRIPTION_CHARS} characters.",
                                      param=f"{at}.description")
            if not isinstance(inner, list) or len(inner) > tool_checks.MAX_TOOLS:
                raise invalid_request(f"{at}.tools must be a list of at most {tool_checks.MAX_TOOLS} tools.", param=f"{at}.tools")
            namespaces[namespace] = description
            for inner_index, member in enumerate(inner):
                member_at = f"{at}.tools[{inner_index}]"
                if not isinstance(member, dict) or member.get("type") not in ("function", "custom"):
                    raise invalid_request(f'{member_at}.type must be "function" or "custom".', param=f"{member_at}.type")
                if member["type"] == "custom":
                    continue  # a free-form tool: left out, as at the top level
                if not isinstance(member.get("name"), str):
                    raise invalid_request(f"{member_at}.name must be a string.", param=f"{member_at}.name")
                flat = f"{namespace}{NAMESPACE_SEPARATOR}{member['name']}"
                names[flat] = (namespace, member["name"])
                offer(member, member_at, flat)  # a flat name over 64 characters is refused with the rest
        elif kind not in HOSTED_TOOLS:
            raise invalid_request(f"{at}.type: an unknown tool type; function and namespace tools are offered to the model, "
                                  "hosted tools are left out (docs/openai.md).", param=f"{at}.type")
    if len(offered) > tool_checks.MAX_TOOLS:
        raise invalid_request(f"tools offer {len(offered)} functions; at most {tool_checks.MAX_TOOLS} are allowed.", param="tools")
    return offered, names, where, namespaces


_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CHOICE_SHAPE = '"auto", "none", "required" or {"type": "function", "name": ...}'


def _tool_choice(value: Any, offered: list[dict[str, Any]], names: Mapping[str, tuple[str, str]]) -> Any:
    # The Responses shapes, as the chat checks take them.
    if value is None:
        return None
    if isinstance(value, str):
        if value not in tool_checks.TOOL_CHOICES:
            raise invalid_request(f"tool_choice must be {_CHOICE_SHAPE}.", param="tool_choice")
        return value
    if isinstance(value, dict) and value.get("type") == "function":
        name, namespace = value.get("name"), value.get("namespace")
        flat = name if namespace is None else next((key for key, place in names.items() if place == (namespace, name)), None)
        if flat is None or not any(tool["function"]["name"] == flat for tool in offered):
            raise invalid_request("tool_choice.name must name one of the function tools (with its namespace, for a namespace's).",
                                  param="tool_choice.name")
        return {"type": "function", "function": {"name": flat}}
    raise invalid_request(f"tool_choice must be {_CHOICE_SHAPE}; hosted tools and allowed_tools are not supported here.",
                          param="tool_choice")


def _echoed_tools(offered: list[dict[str, Any]], names: Mapping[str, tuple[str, str]], namespaces: Mapping[str, str]) -> list[Any]:
    """The tools the model was offered, in the Responses shapes; hosted tools, left out, are not among them."""
    tools: list[Any] = []
    groups: dict[str, list[Any]] = {}
    for tool in offered:
        function = tool["function"]
        namespace, name = names.get(function["name"], (None, function["name"]))
        flat = {"type": "function", "name": name, "description": function["description"], "parameters": function["parameters"],
                "strict": function.get("strict")}
        if namespace is None:
            tools.append(flat)
            continue
        if namespace not in groups:
            groups[namespace] = []
            tools.append({"type": "namespace", "name": namespace, "description": namespaces[namespace], "tools": groups[namespace]})
        groups[namespace].append(flat)
    return tools


def _echoed_choice(choice: Any, names: Mapping[str, tuple[str, str]]) -> Any:
    if not isinstance(choice, dict):
        return choice or "auto"
    namespace, name = names.get(choice["function"]["name"], (None, choice["function"]["name"]))
    return {"type": "function", "name": name} if namespace is None else {"type": "function", "name": name, "namespace": namespace}


def _echoed_format(output: OutputFormat) -> dict[str, Any]:
    if output.kind != "json_schema":
        return {"type": output.kind}
    return {"type": "json_schema", "name": output.name, "schema": output.schema, "strict": output.strict, "description": output.description}


def _renamed(error: ApiError, where_tool: Mapping[int, str]) -> ApiError:
    """A refusal from the chat checks with the field named as the Responses request has it."""

    def rename(text: str) -> str:
        text = re.sub(r"tools\[(\d+)\]\.function", lambda found: where_tool.get(int(found[1]), found[0]), text)
        text = text.replace("response_format.json_schema", "text.format").replace("response_format", "text.format")
        text = text.replace("tool_choice.function.name", "tool_choice.name")
        return text.replace("reasoning_effort", "reasoning.effort")

    param = None if error.param is None else rename(error.param)
    return ApiError(error.code, rename(error.message), param=param, headers=error.headers)


def _response_format(text: Any) -> dict[str, Any] | None:
    # `text.format` in the flat Responses shape, as the chat surface's response_format.
    if text is None:
        return None
    if not isinstance(text, dict):
        raise invalid_request("text must be an object.", param="text")
    format = text.get("format")
    if format is None:
        return None
    if not isinstance(format, dict):
        raise invalid_request("text.format must be an object.", param="text.format")
    if format.get("type") != "json_schema":
        return format
    spec = {key: format.get(key) for key in ("name", "description", "schema", "strict")}
    return {"type": "json_schema", "json_schema": spec}


# --- input ------------------------------------------------------------------------------------


def _messages(payload: dict[str, Any], config: Config, names: Mapping[str, tuple[str, str]]) -> tuple[list[Any], Any, Any]:
    """The chat messages of `instructions` and `input`, with each one's input index."""
    messages: list[dict[str, Any]] = []
    origin: list[int] = []  # each message's index in `input` (-1: instructions)
    instructions = payload.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise invalid_request("instructions must be a string.", param="instructions")
        if instructions.strip(WHITESPACE):
            if not config.openai_system_messages:
                raise invalid_request("instructions: system messages are set by the server.", param="instructions")
            messages.append({"role": "system", "content": instructions})
            origin.append(-1)
    items = payload.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise invalid_request("input must be a string or a non-empty list of items.", param="input")
    if len(items) > config.max_messages:
        raise invalid_request(f"input has {len(items)} items; at most {config.max_messages} are allowed.", param="input")
    flat = {(space, member): key for key, (space, member) in names.items()}
    pending: set[str] = set()  # the call ids no function_call_output answered yet
    for index, item in enumerate(items):
        at = f"input[{index}]"
        if not isinstance(item, dict):
            raise invalid_request(f"{at} must be an object.", param=at)
        kind = item.get("type", "message")
        if kind == "message":
            message = _message(item, at, config)
            if message is not None:
                messages.append(message)
                origin.append(index)
        elif kind == "function_call":
            call_id = tool_checks.checked_identifier(item.get("call_id"), f"{at}.call_id")
            name = tool_checks.checked_identifier(item.get("name"), f"{at}.name")
            namespace = item.get("namespace")
            if namespace is not None:
                name = flat.get((namespace, name), f"{tool_checks.checked_identifier(namespace, f'{at}.namespace')}{NAMESPACE_SEPARATOR}{name}")
            call = {"id": call_id, "type": "function",
                    "function": {"name": name, "arguments": tool_checks.checked_arguments(item.get("arguments"), f"{at}.arguments")}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":  # its calls, unless results came between
                last.setdefault("tool_calls", []).append(call)
                if len(last["tool_calls"]) > tool_checks.MAX_CALLS_PER_MESSAGE:
                    raise invalid_request(f"{at}: more than {tool_checks.MAX_CALLS_PER_MESSAGE} calls in a row.", param=at)
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
                origin.append(index)
            pending.add(call_id)
        elif kind == "function_call_output":
            call_id = tool_checks.checked_identifier(item.get("call_id"), f"{at}.call_id")
            if call_id not in pending:
                raise invalid_request(f"{at}.call_id: no function_call before it has this call_id, or it was answered already.",
                                      param=f"{at}.call_id")
            pending.discard(call_id)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": _output_text(item.get("output"), f"{at}.output")})
            origin.append(index)
        elif kind == "reasoning":
            continue  # not sent back to the model (see the module's docstring)
        elif kind == "item_reference":
            # Resolved before these checks (chat.api.stored_items); one left here was not looked up.
            raise invalid_request(f"{at}: an item reference is taken at the top level of input only.", param=f"{at}.type")
        else:
            raise invalid_request(f"{at}.type: only message, function_call, function_call_output and reasoning items are taken here.",
                                  param=f"{at}.type")
    if not messages or all(message["role"] == "system" for message in messages):
        raise invalid_request("input must hold a message of the user.", param="input")

    def position(index: int) -> int:
        return origin[index]

    def part_name(index: int, part: int) -> str:
        return f"input[{origin[index]}].content[{part}]"

    return messages, position, part_name


_INPUT_ROLES = ("user", "assistant", "system", "developer")


def _message(item: dict[str, Any], at: str, config: Config) -> dict[str, Any] | None:
    role = item.get("role")
    if role not in _INPUT_ROLES:
        raise invalid_request(f'{at}.role must be "user", "assistant", "system" or "developer".', param=f"{at}.role")
    content = item.get("content")
    if role in ("system", "developer"):
        if not config.openai_system_messages:
            raise invalid_request(f"{at}.role: system messages are set by the server.", param=f"{at}.role")
        text = _joined_text(content, at, ("input_text",))
        return {"role": "system", "content": text} if text.strip(WHITESPACE) else None
    if role == "assistant":
        return {"role": "assistant", "content": _joined_text(content, at, ("output_text", "refusal", "input_text"))}
    if isinstance(content, str):
        return {"role": "user", "content": content}
    if not isinstance(content, list):
        raise invalid_request(f"{at}.content must be a string or a list of input_text and input_image parts.", param=f"{at}.content")
    parts: list[Any] = []
    for index, part in enumerate(content):
        part_at = f"{at}.content[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "input_text":
            if not isinstance(part.get("text"), str):
                raise invalid_request(f"{part_at}.text must be a string.", param=f"{part_at}.text")
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "input_image":
            if part.get("file_id") is not None:
                raise invalid_request(f"{part_at}.file_id: files are not kept here; send the image as a data URL in image_url.",
                                      param=f"{part_at}.file_id")
            image = {"url": part.get("image_url")}
            parts.append({"type": "image_url", "image_url": image})
        else:
            raise invalid_request(f"{part_at} must be an input_text or an input_image part.", param=part_at)
    return {"role": "user", "content": parts}


def _joined_text(content: Any, at: str, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        raise invalid_request(f"{at}.content must be a string or a list of text parts.", param=f"{at}.content")
    texts = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        text = part.get("refusal" if kind == "refusal" else "text") if kind in kinds else None
        if not isinstance(text, str):
            part_at = f"{at}.content[{index}]"
            raise invalid_request(f"{part_at} must be one of: {', '.join(kinds)}, with its text.", param=part_at)
        texts.append(text)
    return "\n".join(texts)


def _output_text(output: Any, at: str) -> str:
    # A function's output: a string, or a list of input_text parts (images are not taken here).
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _parts_text(output, at)
    raise invalid_request(f"{at} must be a string or a list of input_text parts.", param=at)


def _parts_text(parts: list[Any], at: str) -> str:
    texts = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict) or part.get("type") != "input_text" or not isinstance(part.get("text"), str):
            raise invalid_request(f"{at}[{index}] must be an input_text part; images and files are not taken in a tool's output here.",
                                  param=f"{at}[{index}]")
        texts.append(part["text"])
    return "\n".join(texts)


# --- the rest -----------------------------------------------------------------------------------


_SUMMARIES = ("auto", "concise", "detailed")


def _summary(reasoning: Mapping[str, Any] | None) -> bool:
    # `generate_summary` is the field's older name.
    value = (reasoning or {}).get("summary", (reasoning or {}).get("generate_summary"))
    if value is not None and value not in _SUMMARIES:
        raise invalid_request(f"reasoning.summary must be one of {', '.join(_SUMMARIES)}, or null.", param="reasoning.summary")
    return value is not None


def checked_metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) > MAX_METADATA_PAIRS:
        raise invalid_request(f"metadata must be an object of at most {MAX_METADATA_PAIRS} pairs.", param="metadata")
    for key, item in value.items():
        if len(key) > MAX_METADATA_KEY_CHARS or not isinstance(item, str) or len(item) > MAX_METADATA_VALUE_CHARS:
            raise invalid_request(f"metadata: keys of at most {MAX_METADATA_KEY_CHARS} characters, string values of at most "
                                  f"{MAX_METADATA_VALUE_CHARS}.", param="metadata")
    return value


def _cache_key(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_CACHE_KEY_CHARS:
        raise invalid_request(f"prompt_cache_key must be a string of 1 to {MAX_CACHE_KEY_CHARS} characters.", param="prompt_cache_key")
    return value


# --- stored responses ------------------------------------------------------------------------

STORED_ID_PREFIX = "resp_"
_STORED_ID = re.compile(r"resp_([0-9a-f]{64})")


def stored_response_key(response_id: Any) -> str | None:
    """The Durable Object id a stored response's id names (64 hex digits after `resp_`), or
    None for anything else: a response that was not stored, or an id never issued."""
    found = _STORED_ID.fullmatch(response_id) if isinstance(response_id, str) else None
    return None if found is None else found.group(1)


def continued(payload: dict[str, Any], history: Mapping[str, Any]) -> dict[str, Any]:
    """`payload` with its `previous_response_id` resolved: the previous response's input
    items, then its output items that ended whole (a message, a call; reasoning is left out
    as in any input, and an item a cut fell in is not history), then this request's input.
    Its `instructions` are not carried over, as on OpenAI's API."""
    earlier = finished_output(history["response"])
    merged = dict(payload)
    del merged["previous_response_id"]
    if isinstance(payload.get("input"), str | list):  # anything else is refused as it was sent
        merged["input"] = [*history["input"], *earlier, *_input_items(payload["input"])]
    return merged


def named_for_history(error: ApiError, field: str, prepended: int) -> ApiError:
    """A refusal of the merged input (`prepended` items that `field`, a previous_response_id
    or a conversation, brought, then the client's) with the place named as the client sent
    it: one of those items is `field`'s; the client's own `input[k]` is its k."""
    found = re.match(r"input\[(\d+)\]", error.param or "")
    if found is None:
        return error
    index = int(found[1])
    if index < prepended:
        return ApiError(error.code, f"{field}: an item it brings is refused ({error.message})", param=field, headers=error.headers)
    own = f"input[{index - prepended}]"
    return ApiError(error.code, error.message.replace(found[0], own), param=(error.param or "").replace(found[0], own, 1),
                    headers=error.headers)


def finished_output(response: Mapping[str, Any]) -> list[Any]:
    """A Response object's output items that ended whole and that a later turn takes as
    history: messages and calls (reasoning is left out as in any input, and an item a cut
    fell in is not history)."""
    return [item for item in response.get("output") or []
            if isinstance(item, dict) and item.get("status") == "completed" and item.get("type") in ("message", "function_call")]


def with_input_before(payload: dict[str, Any], items: list[Any], field: str) -> dict[str, Any]:
    """`payload` without `field`, its input after `items` (an absent input is none)."""
    merged = {key: value for key, value in payload.items() if key != field}
    if payload.get("input") is None or isinstance(payload.get("input"), str | list):  # anything else is refused as it was sent
        merged["input"] = [*items, *_input_items(payload.get("input"))]
    return merged


def _input_items(items: Any) -> list[Any]:
    # A string input is one user message, as `_messages` reads it.
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    return list(items) if isinstance(items, list) else []


def checked_item(item: Any, at: str, config: Config) -> dict[str, Any] | None:
    """One input item checked on its own, as `input` checks it (a call's result need not
    follow its call here), in the shape a stored response keeps it; None for one that
    keeps nothing (a system message of nothing but space). A `reasoning` item keeps its
    text parts only. Raises ApiError 400 naming `at`. For items kept apart from any
    request, as a conversation's (chat.api.conversations)."""
    if not isinstance(item, dict):
        raise invalid_request(f"{at} must be an object.", param=at)
    kind = item.get("type", "message")
    if kind == "message":
        _message(item, at, config)
    elif kind == "function_call":
        tool_checks.checked_identifier(item.get("call_id"), f"{at}.call_id")
        tool_checks.checked_identifier(item.get("name"), f"{at}.name")
        if item.get("namespace") is not None:
            tool_checks.checked_identifier(item["namespace"], f"{at}.namespace")
        tool_checks.checked_arguments(item.get("arguments"), f"{at}.arguments")
    elif kind == "function_call_output":
        tool_checks.checked_identifier(item.get("call_id"), f"{at}.call_id")
        _output_text(item.get("output"), f"{at}.output")
    elif kind == "reasoning":
        return {"type": "reasoning", **{field: _reasoning_parts(item.get(field), f"{at}.{field}") for field in ("summary", "content")}}
    else:
        raise invalid_request(f"{at}.type: only message, function_call, function_call_output and reasoning items are kept.",
                              param=f"{at}.type")
    kept = kept_items([{**item, "type": kind}])
    return kept[0] if kept else None


def _reasoning_parts(parts: Any, at: str) -> list[dict[str, str]]:
    if parts is None:
        return []
    if not isinstance(parts, list) or not all(isinstance(part, dict) and isinstance(part.get("text"), str)
                                              and part.get("type", "summary_text") in _REASONING_PARTS for part in parts):
        raise invalid_request(f"{at} must be a list of summary_text or reasoning_text parts with their text.", param=at)
    return [{"type": part.get("type", "summary_text"), "text": part["text"]} for part in parts]


_REASONING_PARTS = ("summary_text", "reasoning_text")


# What a stored response keeps of its (checked) input: what the model was sent of it, and
# no more. The rest (a `reasoning` item's encrypted content, a system message left out,
# fields a part of its type does not have, arguments sent as "{}") is never read and not
# counted by the input's limits, so kept and carried on by each turn of a
# previous_response_id chain it would grow without bound (the attack on issue 32).
_PART_FIELD = {"input_text": "text", "output_text": "text", "refusal": "refusal", "input_image": "image_url"}


def kept_items(items: Any) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    for item in _input_items(items):
        kind = item.get("type", "message")
        if kind == "message":
            content = item.get("content")
            if isinstance(content, list):
                content = [{"type": part["type"], field: part[field]} for part in content
                           if (field := _PART_FIELD.get(part.get("type"), "")) in part]
            if item["role"] in ("system", "developer") and not _joined_text(content, "input", ("input_text",)).strip(WHITESPACE):
                continue  # left out of the turn (`_message`)
            kept.append({"type": "message", "role": item["role"], "content": content})
        elif kind == "function_call":
            call = {"type": kind, "call_id": item["call_id"], "name": item["name"],
                    "arguments": tool_checks.checked_arguments(item.get("arguments"), "arguments")}
            kept.append(call if item.get("namespace") is None else {**call, "namespace": item["namespace"]})
        elif kind == "function_call_output":
            kept.append({"type": kind, "call_id": item["call_id"], "output": _output_text(item.get("output"), "output")})
    return kept
