"""Anthropic's Messages API (docs/anthropic.md): a `POST /v1/messages` request checked
before any inference, turned into the ChatTurn every surface hands on, and Anthropic's
error shape. Pure Python.

The request's blocks become the binding's messages: text and images of a user message
its content; each `tool_result` a tool message answering its call; an assistant's
`tool_use` blocks its tool calls; `system`, and after it the messages of that role that
Claude Code puts among the others (after the user's, with its environment and skills),
the system message. Thinking blocks sent back are left out: their signatures are
Anthropic's, and the open models here read no earlier thinking. Fields the Worker cannot
honour get a 400 naming them; fields that ask nothing of the answer (cache_control,
metadata, context_management, service_tier) are accepted and left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from chat.api import tools as tool_checks
from chat.api.images import urls_in
from chat.api.openai import checked_stops
from chat.api.validation import checked_message_list, checked_sampling, checked_turn
from chat.config import INPUT_CHARS_PER_TOKEN, Config
from chat.turn import ChatTurn
from chat.web.errors import ApiError, invalid_request
from sse import anthropic_error

__all__ = ["MAX_STOP_SEQUENCES", "MessagesRequest", "anthropic_error_body", "count_tokens", "validate_count", "validate_messages"]

MAX_STOP_SEQUENCES = 16  # each of openai.MAX_STOP_CHARS at most
# A budget above MAX_TOKENS is lowered to it; one above this is no model's.
MAX_BUDGET = 10_000_000
MAX_METADATA_CHARS = 1024
# count_tokens' estimate of an image: about the most Anthropic counts for one (its vision
# page, platform.claude.com/docs/en/build-with-claude/vision, read 2026-12-04: an image of
# more than ~1,600 tokens is scaled down first).
IMAGE_TOKENS = 1_600  # metadata.user_id: Claude Code's is a JSON string of about 150 characters
# Claude Code names its models with these prefixes (claude-opus-5-5, claude-haiku-5-5 in
# 2.1.328, 2026-12-04): they are answered by MODEL and its fallbacks.
CLAUDE_PREFIX = "claude-"
# A thinking budget (thinking.budget_tokens) as a reasoning effort: up to the first bound low, ...
_BUDGET_EFFORTS = ((2_048, "low"), (8_192, "medium"))
# output_config.effort (Anthropic's effort control) as the catalog's efforts.
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "max": "xhigh"}
# A client's own tool; Anthropic's tools are named with their version's date
# (web_search_20250305, bash_20250124, text_editor_20250728, code_execution_20250825): they
# run on Anthropic's side or have schemas only its models know, so they are left out, as
# /v1/responses leaves out hosted tools.
_CUSTOM_TOOL_TYPES = (None, "custom")
_ANTHROPIC_TOOL = re.compile(r"[a-z][a-z0-9_]{0,63}_[0-9]{8}")
# Fields that ask for what this Worker cannot do.
_NOT_HONOURED = {
    "mcp_servers": "MCP servers are not connected here; run the MCP client on your side",
    "container": "containers (code execution) are not available here",
}
# Fields accepted and left out: they ask nothing of the answer.
_LEFT_OUT = ("metadata", "context_management", "service_tier", "cache_control")


@dataclass(frozen=True, kw_only=True)
class MessagesRequest:
    """A checked Messages request: the turn, whether to stream, whether the client sees
    thinking (sse.AnthropicEncoder's `thinking`)."""

    turn: ChatTurn
    stream: bool
    thinking: bool


def anthropic_error_body(error: ApiError, request_id: str) -> str:
    """Anthropic's `{"type": "error", "error": {"type", "message"}}`; the request id
    travels in the request-id header."""
    return json.dumps(anthropic_error(error.code, error.message))


def validate_messages(payload: Any, config: Config) -> MessagesRequest:
    """The request in `payload`, or ApiError: 400 `invalid_request` naming the field, 404
    `model_not_found` for a model neither served here nor Claude's."""
    messages = checked_message_list(payload, config)
    for field, reason in _NOT_HONOURED.items():
        if payload.get(field) is not None:
            raise invalid_request(f"{field}: {reason}.", param=field)
    model = payload.get("model")
    if not isinstance(model, str) or not model:
        raise invalid_request("model must be a model's name.", param="model")
    max_tokens = payload.get("max_tokens")
    if type(max_tokens) is not int or not 1 <= max_tokens <= MAX_BUDGET:
        raise invalid_request(f"max_tokens must be an integer from 1 to {MAX_BUDGET}.", param="max_tokens")
    stream = payload.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise invalid_request("stream must be true or false.", param="stream")
    _check_metadata(payload.get("metadata"))
    temperature = payload.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)
                                    or not 0 <= temperature <= 1):
        # Anthropic's range; within it, the model's own (chat.model.catalog).
        raise invalid_request("temperature must be a number from 0 to 1.", param="temperature")
    effort, thinking = _reasoning(payload.get("thinking"), payload.get("output_config"))
    plain, positions = _plain_messages(_system(payload.get("system"), config), messages, config)
    offered = _tools(payload.get("tools"))
    chat: dict[str, Any] = {
        # A Claude model's name asks for this Worker's own: MODEL and its fallbacks.
        "model": None if model.startswith(CLAUDE_PREFIX) else model,
        "temperature": payload.get("temperature"),
        **({"tools": offered} if offered else {}),
        **_tool_choice(payload.get("tool_choice"), offered),
        **({"reasoning_effort": effort} if effort is not None else {}),
    }

    def part_name(index: int, part: int) -> str:
        return f"messages[{positions[index][0]}].content[{positions[index][1] + part}]"

    try:
        turn = checked_turn(chat, plain, config, position=lambda index: positions[index][0], counted="messages and tool results",
                            system=config.openai_system_messages, model_required=False,
                            # A budget above the Worker's is its own: the stop reason says where an answer reached it.
                            max_tokens=min(max_tokens, config.max_tokens), part_name=part_name)
    except ApiError as error:
        raise _renamed(error) from None
    options = [("top_p", checked_sampling(payload["top_p"], "top_p", (turn.models or config.models)[0]))] \
        if payload.get("top_p") is not None else []
    _check_top_k(payload.get("top_k"))
    turn = replace(turn, options=tuple(options), stop=_stop_sequences(payload.get("stop_sequences")))
    return MessagesRequest(turn=turn, stream=bool(stream), thinking=thinking)


def validate_count(payload: Any, config: Config) -> MessagesRequest:
    """A count_tokens request: a Messages request but for max_tokens, which it has not."""
    if not isinstance(payload, dict):
        raise invalid_request("The request body must be a JSON object.")
    return validate_messages({**payload, "max_tokens": 1}, config)


def count_tokens(request: MessagesRequest) -> dict[str, int]:
    """POST /v1/messages/count_tokens: an estimate, never a model call. Its system prompt,
    messages and tools are counted at the characters a token the Worker's own limits
    assume (chat.config.INPUT_CHARS_PER_TOKEN): Workers AI has no tokenizer to ask."""
    chars = sum(tool_checks.input_chars(dict(message)) for message in request.turn.messages)
    chars += len(json.dumps(request.turn.tool_inputs.get("tools", []), separators=(",", ":")))
    images = sum(1 for _ in urls_in(request.turn.messages))
    return {"input_tokens": max(1, -(-chars // INPUT_CHARS_PER_TOKEN) + images * IMAGE_TOKENS)}


# --- the request's parts ------------------------------------------------------------------


def _check_metadata(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise invalid_request("metadata must be an object.", param="metadata")
    user = value.get("user_id")
    if user is not None and (not isinstance(user, str) or len(user) > MAX_METADATA_CHARS):
        raise invalid_request(f"metadata.user_id must be a string of at most {MAX_METADATA_CHARS} characters.", param="metadata.user_id")


def _reasoning(thinking: Any, output_config: Any) -> tuple[str | None, bool]:
    """(the reasoning effort to ask for, None: the model's default; whether the client
    sees the thinking)."""
    effort: str | None = None
    shown = False
    if thinking is not None:
        kind = thinking.get("type") if isinstance(thinking, dict) else None
        if kind not in ("enabled", "disabled", "adaptive"):
            raise invalid_request('thinking.type must be "enabled", "disabled" or "adaptive".', param="thinking.type")
        display = thinking.get("display")
        if display is not None and display not in ("summarized", "omitted"):
            raise invalid_request('thinking.display must be "summarized" or "omitted".', param="thinking.display")
        shown = kind != "disabled" and display != "omitted"
        if kind == "disabled":
            effort = "none"
        elif kind == "enabled":
            budget = thinking.get("budget_tokens")
            if type(budget) is not int or budget < 1:
                raise invalid_request("thinking.budget_tokens must be a positive integer.", param="thinking.budget_tokens")
            effort = next((name for bound, name in _BUDGET_EFFORTS if budget <= bound), "high")
    if output_config is not None:
        if not isinstance(output_config, dict):
            raise invalid_request("output_config must be an object.", param="output_config")
        if output_config.get("format") is not None:
            raise invalid_request("output_config.format: structured outputs are taken on /v1/chat/completions and "
                                  "/v1/responses here (response_format, text.format).", param="output_config.format")
        wanted = output_config.get("effort")
        if wanted is not None:
            if not isinstance(wanted, str) or wanted not in _EFFORTS:
                raise invalid_request(f"output_config.effort must be one of {', '.join(_EFFORTS)}.", param="output_config.effort")
            if effort != "none":
                effort = _EFFORTS[wanted]
    return effort, shown


def _system(value: Any, config: Config) -> str | None:
    if value is None:
        return None
    if not config.openai_system_messages:
        raise invalid_request(_SET_BY_SERVER.format(field="system"), param="system")
    text = _text_of(value, "system")
    return text or None


# OPENAI_SYSTEM_MESSAGES = "refuse": the system prompt is the server's alone (docs/deploying.md).
_SET_BY_SERVER = "{field}: the system prompt is set by the server here."


def _text_of(value: Any, where: str) -> str:
    """A string, or the text of a list of text blocks joined by blank lines."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise invalid_request(f"{where} must be a string or a list of text blocks.", param=where)
    texts = []
    for index, block in enumerate(value):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise invalid_request(f"{where}[{index}] must be a text block.", param=f"{where}[{index}]")
        texts.append(block["text"])
    return "\n\n".join(texts)


# Each binding message's origin: (its message's index in the request, the index of its
# first block there), for refusals that name the client's own block.
Positions = list[tuple[int, int]]


def _plain_messages(system: str | None, messages: list[Any], config: Config) -> tuple[list[Any], Positions]:
    plain: list[Any] = []
    positions: Positions = []
    instructions = [system] if system is not None else []
    calls: list[str] = []  # the tool_use ids of the assistant message before, each to be answered once next
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise invalid_request(f"{where} must be an object.", param=where)
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant", "system"):
            raise invalid_request(f'{where}.role must be "user" or "assistant".', param=f"{where}.role")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise invalid_request(f"{where}.content must be a string or a list of blocks.", param=f"{where}.content")
        if role == "system":
            if not config.openai_system_messages:
                raise invalid_request(_SET_BY_SERVER.format(field=f"{where}.role"), param=f"{where}.role")
            text = _text_of(blocks, f"{where}.content")
            if text.strip():  # Claude Code's --bare sends one of []
                instructions.append(text)
            continue
        converted = _converted(role, blocks, where)
        calls = _paired(calls, converted, where)
        for entry, first in converted:
            plain.append(entry)
            positions.append((index, first))
    if calls:
        raise invalid_request(f"messages: the last message's {len(calls)} tool_use blocks need tool_result blocks in a user message "
                              "after it.", param="messages")
    if not plain:
        raise invalid_request("messages: the last message must come from the user, or be a tool result.", param="messages")
    if instructions:
        plain.insert(0, {"role": "system", "content": "\n\n".join(instructions)})
        positions.insert(0, (0, 0))
    return plain, positions


def _paired(calls: list[str], converted: list[tuple[dict[str, Any], int]], where: str) -> list[str]:
    """The tool_use ids the next message must answer, after this one (`converted`): the
    message after an assistant's tool_use blocks answers each of them once, with
    tool_result blocks, as Anthropic's API requires."""
    answered = [entry["tool_call_id"] for entry, _ in converted if entry["role"] == "tool"]
    if calls or answered:
        if len(set(answered)) != len(answered):
            raise invalid_request(f"{where}: two tool_result blocks answer the same tool_use.", param=where)
        if set(answered) != set(calls):
            raise invalid_request(f"{where}: the tool_use blocks of the assistant message before it need one tool_result each "
                                  f"here, and only those ({len(calls)} asked, {len(set(answered) & set(calls))} answered).", param=where)
    return [call["id"] for entry, _ in converted for call in entry.get("tool_calls", [])]


def _converted(role: str, blocks: list[Any], where: str) -> list[tuple[dict[str, Any], int]]:
    """One request message's binding messages, each with the index of its first block."""
    if role == "assistant":
        return [(_assistant(blocks, where), 0)]
    out: list[tuple[dict[str, Any], int]] = []
    parts: list[dict[str, Any]] = []
    first = 0
    for index, block in enumerate(blocks):
        at = f"{where}.content[{index}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            if parts:
                raise invalid_request(f"{at}: tool_result blocks come first in a user message, before its text and images.",
                                      param=at)
            out.append((_tool_result(block, at), index))
            first = index + 1
        elif kind == "text":
            parts.append({"type": "text", "text": _block_text(block, at)})
        elif kind == "image":
            parts.append(_image(block, at))
        else:
            raise invalid_request(f'{at}.type must be "text", "image" or "tool_result" in a user message.', param=f"{at}.type")
    if parts or not out:
        # Text alone stays a string; with images, the parts chat.api.images checks.
        content: Any = "\n\n".join(part["text"] for part in parts) if all(p["type"] == "text" for p in parts) else parts
        out.append(({"role": "user", "content": content}, first))
    return out


def _block_text(block: dict[str, Any], at: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise invalid_request(f"{at}.text must be a string.", param=f"{at}.text")
    return text


def _image(block: dict[str, Any], at: str) -> dict[str, Any]:
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64":
        media, data = source.get("media_type"), source.get("data")  # type: ignore[union-attr]
        if not isinstance(media, str) or not isinstance(data, str):
            raise invalid_request(f"{at}.source needs media_type and data as strings.", param=f"{at}.source")
        url = f"data:{media};base64,{data}"
    elif kind == "url":
        url = source.get("url")  # type: ignore[union-attr]
        if not isinstance(url, str):
            raise invalid_request(f"{at}.source.url must be a string.", param=f"{at}.source.url")
    else:
        raise invalid_request(f'{at}.source.type must be "base64" or "url".', param=f"{at}.source.type")
    # The images path of /v1 reads it (chat.api.images): what it takes, and its bounds.
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_result(block: dict[str, Any], at: str) -> dict[str, Any]:
    call_id = tool_checks.checked_identifier(block.get("tool_use_id"), f"{at}.tool_use_id")
    content = block.get("content", "")
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "image":
                texts.append("(an image, which a tool result cannot pass to the model here)")
            else:
                raise invalid_request(f"{at}.content[{index}] must be a text or image block.", param=f"{at}.content[{index}]")
        content = "\n\n".join(texts)
    if not isinstance(content, str):
        raise invalid_request(f"{at}.content must be a string or a list of blocks.", param=f"{at}.content")
    error = block.get("is_error")
    if error is not None and not isinstance(error, bool):
        raise invalid_request(f"{at}.is_error must be true or false.", param=f"{at}.is_error")
    # The binding's tool messages have no error flag: the model reads it in the text.
    text = f"Error: {content}" if error else content
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _assistant(blocks: list[Any], where: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        at = f"{where}.content[{index}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(_block_text(block, at))
        elif kind == "tool_use":
            arguments = block.get("input")
            if not isinstance(arguments, dict):
                raise invalid_request(f"{at}.input must be an object.", param=f"{at}.input")
            # Checked here, in the client's names, before the chat checks see the binding's.
            call_id = tool_checks.checked_identifier(block.get("id"), f"{at}.id")
            if call_id in (call["id"] for call in calls):
                raise invalid_request(f"{at}.id: another tool_use of this message has this id.", param=f"{at}.id")
            name = tool_checks.checked_identifier(block.get("name"), f"{at}.name")
            text = tool_checks.checked_arguments(tool_checks.compact_json(arguments, f"{at}.input"), f"{at}.input")
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": text}})
        elif kind not in ("thinking", "redacted_thinking"):
            raise invalid_request(f'{at}.type must be "text", "tool_use" or "thinking" in an assistant message.', param=f"{at}.type")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    return message


def _tools(value: Any) -> list[dict[str, Any]]:
    """The client's tools in the chat shape chat.api.tools checks (its bounds and names)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_request("tools must be a list of tools.", param="tools")
    if len(value) > tool_checks.MAX_TOOLS:
        raise invalid_request(f"tools has {len(value)} entries; at most {tool_checks.MAX_TOOLS} are allowed.", param="tools")
    offered = []
    for index, tool in enumerate(value):
        if not isinstance(tool, dict):
            raise invalid_request(f"tools[{index}] must be an object.", param=f"tools[{index}]")
        kind = tool.get("type")
        if kind not in _CUSTOM_TOOL_TYPES:
            if isinstance(kind, str) and _ANTHROPIC_TOOL.fullmatch(kind):
                continue  # one of Anthropic's own tools (see _ANTHROPIC_TOOL)
            raise invalid_request(f'tools[{index}].type must be "custom" (or left out), or one of Anthropic\'s tools '
                                  '(web_search_20250305, ...), which are left out.', param=f"tools[{index}].type")
        offered.append({"type": "function", "function": {"name": tool.get("name"), "description": tool.get("description"),
                                                         "parameters": tool.get("input_schema")}})
    return offered


def _tool_choice(value: Any, offered: list[dict[str, Any]]) -> dict[str, Any]:
    # Without tools any valid choice asks for text, as Claude answers (docs/anthropic.md).
    if value is None:
        return {}
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise invalid_request('tool_choice.type must be "auto", "any", "tool" or "none".', param="tool_choice.type")
    if not offered:
        return {}  # with nothing to call, any choice is to answer in text
    choice: Any = {"auto": "auto", "any": "required", "none": "none"}.get(kind)
    if kind == "tool":
        choice = {"type": "function", "function": {"name": value.get("name")}}
    fields: dict[str, Any] = {"tool_choice": choice}
    parallel = value.get("disable_parallel_tool_use")
    if parallel is not None:
        if not isinstance(parallel, bool):
            raise invalid_request("tool_choice.disable_parallel_tool_use must be true or false.",
                                  param="tool_choice.disable_parallel_tool_use")
        fields["parallel_tool_calls"] = not parallel
    return fields


def _check_top_k(value: Any) -> None:
    # Accepted and not sent: the models' schemas here do not all take it (docs/anthropic.md).
    if value is not None and (type(value) is not int or value < 1):
        raise invalid_request("top_k must be a positive integer.", param="top_k")


def _stop_sequences(value: Any) -> tuple[str, ...]:
    return () if value is None else checked_stops(value, "stop_sequences", "a list", MAX_STOP_SEQUENCES)


# The chat checks name the chat shape's fields; a refusal names the client's.
_RENAMES: tuple[tuple[str, str], ...] = (
    (".function.parameters", ".input_schema"), (".function.description", ".description"), (".function.name", ".name"),
    ("tool_choice.function.name", "tool_choice.name"), ("reasoning_effort", "output_config.effort"),
)


def _renamed(error: ApiError) -> ApiError:
    rename: Callable[[str], str] = lambda text: _apply(text, _RENAMES)  # noqa: E731
    param = rename(error.param) if error.param is not None else None
    return ApiError(error.code, rename(error.message), param=param, headers=error.headers)


def _apply(text: str, renames: tuple[tuple[str, str], ...]) -> str:
    for old, new in renames:
        text = text.replace(old, new)
    return text
