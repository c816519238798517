"""Checks a chat turn before any inference: pure Python, so it is unit-tested on CPython."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, cast

from chat.api import images, tools
from chat.config import Config
from chat.model import catalog
from chat.output import schema as output_schema
from chat.turn import ChatTurn, ContentPart, Message, OutputFormat
from chat.web.errors import ApiError, invalid_request
from sse import MAX_JSON_DEPTH, JSONDepthError, loads_bounded

ROLES = ("user", "assistant", "tool")
# A turn asks the model to answer a user, or to go on from its tools' results.
LAST_ROLES = ("user", "tool")
MAX_CHAT_ID_CHARS = 128
# What a client may set of the AI Gateway's per-request options: skipping the cache is
# always safe; a TTL, a cache key, metadata or the gateway itself are the Worker's (a
# client could otherwise cache answers for others, or spend under someone else's name).
CLIENT_GATEWAY_OPTIONS = ("skip_cache",)
# The gateway's other options, named in a refusal; any other key is not echoed back.
WORKER_GATEWAY_OPTIONS = frozenset({
    "id", "cache_ttl", "cache_key", "metadata", "collect_log", "event_id", "request_timeout_ms", "retries",
    "skipCache", "cacheTtl", "cacheKey", "collectLog", "eventId", "requestTimeoutMs",
})

# What counts as blank content: ECMAScript's WhiteSpace and LineTerminator (what `\s`
# means in a browser), spelled out the same way in docs/openapi.yaml's pattern. Python's
# str.strip() differs both ways (it strips U+001C-U+001F and U+0085 and keeps U+FEFF),
# which made the server and its published schema disagree about the same message.
WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def is_json_media_type(content_type: str | None) -> bool:
    if not content_type:
        return False
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


def parse_json_body(body: bytes) -> Any:
    """The JSON value of a request body, or ApiError(400): `invalid_json` for text that is
    not UTF-8, not JSON (NaN and Infinity are not) or nested deeper than MAX_JSON_DEPTH;
    `invalid_request` for valid JSON holding an integer too long for Python to read."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError("invalid_json", "The request body is not valid UTF-8.") from None
    return _parse_json_text(text)


def _parse_json_text(text: str) -> Any:
    try:
        return loads_bounded(text)
    except JSONDepthError:
        message = f"The request body nests arrays and objects deeper than {MAX_JSON_DEPTH} levels."
        raise ApiError("invalid_json", message) from None
    except json.JSONDecodeError:
        raise ApiError("invalid_json", "The request body is not valid JSON.") from None
    except ValueError:
        # Only an integer over Python's digit limit gets here: valid JSON, unusable value.
        raise invalid_request("The request body holds a number with too many digits.") from None


def validate_chat(payload: Any, config: Config) -> ChatTurn:
    """The chat turn in `payload`, or ApiError naming the bad field (400; 413 for an
    image's bytes)."""
    messages = checked_message_list(payload, config)
    return checked_turn(payload, messages, config, position=lambda index: index, resumable=_resumable(payload.get("resumable")))


PartName = Callable[[int, int], str]


def checked_message_list(payload: Any, config: Config) -> list[Any]:
    """The preamble every surface shares: the body is an object whose `messages` is a
    non-empty list of at most MAX_MESSAGES entries (counted before any is converted, so a
    surface that turns one entry into several is still bounded by what the client sent)."""
    if not isinstance(payload, dict):
        raise invalid_request("The request body must be a JSON object.")
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid_request("messages must be a non-empty list.", param="messages")
    if len(messages) > config.max_messages:
        raise invalid_request(f"messages has {len(messages)} entries; at most {config.max_messages} are allowed.", param="messages")
    return messages


def checked_turn(
    payload: dict[str, Any], messages: list[Any], config: Config, *, position: Callable[[int], int],
    counted: str = "entries", system: bool = False, model_required: bool = False, resumable: bool = False,
    max_tokens: int | None = None, part_name: PartName | None = None, field: str = "messages",
) -> ChatTurn:
    """The fields every surface shares, checked once: the model choice, tools, messages
    (plain messages in the binding's shape, converted by the surface; `position`, `counted`,
    `system` and `part_name` as checked_messages takes them), max_tokens (unless the
    surface read its own), temperature, reasoning_effort, gateway and response_format. Then
    the models that can answer it (chat.model.catalog's capabilities): a turn with images
    and no model named goes to VISION_MODEL first."""
    named = model_required or payload.get("model") is not None
    models = checked_model_choice(payload.get("model"), config) if named else ()
    tool_inputs = tools.checked_tool_fields(payload)
    output = checked_response_format(payload.get("response_format"))
    budget = images.ImageBudget()
    checked = checked_messages(messages, config, position=position, counted=counted, system=system, part_name=part_name,
                               budget=budget, field=field)
    needs: list[tuple[catalog.Capability, str]] = []
    if budget.first is not None:
        needs.append(("vision", budget.first))
        if not named:
            models = config.vision_models
    if tools.uses_tools(tool_inputs, checked):
        needs.append(("tools", "tools" if tool_inputs else "messages"))
    if output is not None and output.kind != "text":
        needs.append((output.kind, "response_format"))
    if needs:
        # Spelled out even when the client named no model, so that MODEL's order leaves
        # out the models that cannot answer too (MODEL itself, when it cannot).
        models = models_able(models or config.models, needs, named=named)
    sized = models_sized(models or config.models, checked, config, named=named, field=field)
    models = sized if models or sized != config.models else ()  # (): MODEL's order, unchanged
    return ChatTurn(
        messages=checked,
        max_tokens=checked_max_tokens(payload.get("max_tokens"), config) if max_tokens is None else max_tokens,
        temperature=checked_temperature(payload.get("temperature"), (models or config.models)[0]),
        models=models,
        resumable=resumable,
        reasoning_effort=checked_reasoning_effort(payload.get("reasoning_effort")),
        skip_cache=checked_gateway_options(payload.get("gateway")),
        tool_inputs=tool_inputs,
        output=output if output is not None and output.kind != "text" else None,
    )


# What each capability is called in a refusal: (the named model) "does not take tools";
# (none of the models this Worker serves) "takes tools".
_LACKING: dict[str, tuple[str, str]] = {
    "tools": ("does not take tools", "takes tools"),
    "json_object": ("cannot answer in JSON mode", "answers in JSON mode"),
    "json_schema": ("cannot answer to a JSON schema", "answers to a JSON schema"),
    "vision": ("does not take images", "takes images"),
}


def models_able(models: Sequence[str], needs: Sequence[tuple[catalog.Capability, str]], *, named: bool) -> tuple[str, ...]:
    """`models` (the requested or primary model first, then its fallbacks) without those
    that lack a capability the turn needs; each need names the request field that asks
    for it ("tools"; "messages" for a history of calls; "response_format"). `named`: the
    client asked for the first model, so it must be able (answering with another would be
    a surprise); else the Worker's own order is only filtered. Raises ApiError(400) on
    the field of the need no model is left for."""
    first = models[0]
    for capability, field in needs:
        if named and not catalog.can(first, capability):
            why = _LACKING[capability][0] + (", which the conversation's calls need" if field == "messages" else "")
            raise invalid_request(f"{field}: {first} {why}.", param=field)
        if not any(catalog.can(model, capability) for model in models):
            raise invalid_request(f"{field}: none of the models this Worker serves {_LACKING[capability][1]}.", param=field)
    able = tuple(model for model in models if all(catalog.can(model, capability) for capability, _ in needs))
    if not able:
        field = needs[-1][1]
        every = " and ".join(_LACKING[capability][1] for capability, _ in needs)
        raise invalid_request(f"{field}: none of the models this Worker serves {every}.", param=field)
    return able


def models_sized(models: Sequence[str], messages: Sequence[Message], config: Config, *, named: bool, field: str) -> tuple[str, ...]:
    """`models` without those whose context window the turn does not fit (Config's
    input_chars_for and messages_for): a fallback too small is skipped. Raises
    ApiError(400) on `field` when the named model, or every model, is too small."""
    chars = sum(tools.input_chars(message) for message in messages)

    def fits(model: str) -> bool:
        return chars <= config.input_chars_for(model) and len(messages) <= config.messages_for(model)

    first = models[0]
    if (named and not fits(first)) or not any(fits(model) for model in models):
        raise invalid_request(f"{field}: {len(messages)} messages of {chars} characters in all; {first} takes at most "
                              f"{config.messages_for(first)} messages and {config.input_chars_for(first)} characters "
                              "(sized to its context window).", param=field)
    able = [model for model in models if fits(model)]
    # The same tuple when every model fits (the commonest case): no new one per request.
    return tuple(models) if len(able) == len(models) else tuple(able)


def checked_model_choice(model: Any, config: Config) -> tuple[str, ...]:
    """The models to try for a request naming `model`: it first, then the Worker's other
    models in their configured order (the fallbacks). ApiError 400 for a model that is not
    a string, 404 `model_not_found` for one not served here (GET /v1/models lists them)."""
    if not isinstance(model, str):
        raise invalid_request("model must be a string naming a model of GET /v1/models.", param="model")
    if model not in config.served_models:
        # The name is not echoed: it can be anything, of any length.
        raise ApiError("model_not_found", "This model is not served here; GET /v1/models lists the models that are.", param="model")
    return (model, *[other for other in config.models if other != model])


RESPONSE_FORMATS = ("text", "json_object", "json_schema")
_SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # OpenAI's rule for json_schema.name


def checked_response_format(value: Any) -> OutputFormat | None:
    """OpenAI's `response_format`: `{"type": "text"}` (the default), `{"type":
    "json_object"}`, or `{"type": "json_schema", "json_schema": {"name", "description"?,
    "schema", "strict"?}}` with a schema that chat.output.schema accepts (bounded; under
    strict, OpenAI's strict subset). None when absent. Raises ApiError(400) naming the field."""
    if value is None:
        return None
    field = "response_format"
    if not isinstance(value, dict) or value.get("type") not in RESPONSE_FORMATS:
        raise invalid_request(f'{field} must be an object whose type is "text", "json_object" or "json_schema".', param=f"{field}.type")
    kind = value["type"]
    if kind != "json_schema":
        return OutputFormat(kind=kind)
    spec = value.get("json_schema")
    field = "response_format.json_schema"
    if not isinstance(spec, dict):
        raise invalid_request(f"{field} must be an object with a name and a schema.", param=field)
    name = spec.get("name")
    if not isinstance(name, str) or not _SCHEMA_NAME.fullmatch(name):
        raise invalid_request(f"{field}.name must be 1 to 64 letters, digits, _ or -.", param=f"{field}.name")
    description = spec.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > tools.MAX_DESCRIPTION_CHARS):
        raise invalid_request(f"{field}.description must be a string of at most {tools.MAX_DESCRIPTION_CHARS} characters.",
                              param=f"{field}.description")
    strict = spec.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise invalid_request(f"{field}.strict must be true, false or null.", param=f"{field}.strict")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise invalid_request(f"{field}.schema must be a JSON Schema object (json_object asks for any JSON object).",
                              param=f"{field}.schema")
    output_schema.checked_schema(schema, f"{field}.schema", strict=bool(strict))
    return OutputFormat(kind="json_schema", name=name, schema=schema, strict=bool(strict), description=description)


def checked_reasoning_effort(value: Any) -> str | None:
    """OpenAI's reasoning_effort values; the catalog maps each onto a model's own inputs."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in catalog.EFFORTS:
        raise invalid_request(f"reasoning_effort must be one of {', '.join(catalog.EFFORTS)}.", param="reasoning_effort")
    return value


def checked_gateway_options(value: Any) -> bool:
    """Whether the client asked to skip the AI Gateway's cache (`"gateway": {"skip_cache":
    true}`); any option a client may not set is a 400 naming it."""
    if value is None:
        return False
    if not isinstance(value, dict):
        raise invalid_request("gateway must be an object.", param="gateway")
    allowed = ", ".join(CLIENT_GATEWAY_OPTIONS)
    for key in value:
        if key in WORKER_GATEWAY_OPTIONS:
            field = f"gateway.{key}"
            raise invalid_request(f"{field}: a client may set only {allowed}; the Worker sets the rest.", param=field)
        if key not in CLIENT_GATEWAY_OPTIONS:
            raise invalid_request(f"gateway: an unknown option; a client may set only {allowed}.", param="gateway")
    skip = value.get("skip_cache")
    if skip is None:
        return False
    if not isinstance(skip, bool):
        raise invalid_request("gateway.skip_cache must be true or false.", param="gateway.skip_cache")
    return skip


def checked_messages(
    messages: list[Any], config: Config, *, position: Callable[[int], int], system: bool = False,
    counted: str = "entries", part_name: PartName | None = None, budget: images.ImageBudget | None = None,
    field: str = "messages",
) -> tuple[Message, ...]:
    """The messages in the binding's shape, or ApiError(invalid_request) naming the bad one.

    User (and system) messages are `{"role", "content"}` with a character other than
    whitespace. Assistant messages may have empty or null content (kept as "") and
    `tool_calls`; a tool message answers a call of the nearest assistant message with
    tool_calls before it (chat.api.tools gives both their shapes). Content, tool results and
    call arguments count towards MAX_INPUT_CHARS. The last message is the user's or a
    tool result. `position` maps an index in `messages` to the one the client sent, so
    errors name the client's own message even when some were left out or one became
    several. `system`: whether the client may send system messages (else they are the
    server's alone). `counted`: what the refusal of more than MAX_MESSAGES calls the
    entries of `messages`, when they are not the client's own.

    A user message's content may instead be a list of text and image parts (OpenAI's
    shape; chat.api.images checks each image, spending from `budget`); `part_name(index,
    part)` gives a part's name in the client's request (default: `messages[i].content[k]`).
    Text parts count towards MAX_INPUT_CHARS; images have their own bounds. `field`: the
    request field the messages came from, as refusals name it (`input` on /v1/responses)."""
    budget = budget if budget is not None else images.ImageBudget()
    name_part = part_name or (lambda index, part: f"{field}[{position(index)}].content[{part}]")
    # MAX_MESSAGES bounds what the model reads: on /api/ui-chat, after each tool result
    # became a message of its own.
    if len(messages) > config.max_messages:
        raise invalid_request(f"{field} has {len(messages)} {counted}; at most {config.max_messages} are allowed.", param=field)
    checked: list[dict[str, Any]] = []
    total_chars = 0
    calls: dict[str, str] = {}  # those of the nearest assistant message with tool_calls
    for index, message in enumerate(messages):
        where = f"{field}[{position(index)}]"
        if not isinstance(message, dict):
            raise invalid_request(f"{where} must be an object.", param=where)
        role = message.get("role")
        if role == "system" and not system:
            raise invalid_request(f"{where}.role: system messages are set by the server.", param=f"{where}.role")
        if role not in ROLES and not (system and role == "system"):
            allowed = '"system", "user", "assistant" or "tool"' if system else '"user", "assistant" or "tool"'
            raise invalid_request(f"{where}.role must be {allowed}.", param=f"{where}.role")
        if role == "assistant":
            entry = tools.checked_assistant_message(message, where)
            if "tool_calls" in entry:
                calls = tools.call_names(entry)
        elif role == "tool":
            entry = tools.checked_tool_message(message, where, calls)
        else:
            content = message.get("content")
            if role == "user" and isinstance(content, list):
                entry = {"role": role, "content": _checked_parts(content, where, partial(name_part, index), budget)}
            elif not isinstance(content, str) or not content.strip(WHITESPACE):
                what = "a string, or a list of text and image parts," if role == "user" else "a string"
                raise invalid_request(f"{where}.content must be {what} with a character other than whitespace.", param=f"{where}.content")
            else:
                entry = {"role": role, "content": content}
        total_chars += tools.input_chars(entry)
        checked.append(entry)
    if total_chars > config.max_input_chars:
        raise invalid_request(f"{field}: content, tool results and call arguments total {total_chars} characters; "
                              f"at most {config.max_input_chars} are allowed.", param=field)
    if checked[-1]["role"] not in LAST_ROLES:
        raise invalid_request(f"{field}: the last message must come from the user, or be a tool result.", param=field)
    # Each entry was built in Message's shape above (or by chat.api.tools).
    return cast(tuple[Message, ...], tuple(checked))


def _checked_parts(parts: list[Any], where: str, name: Callable[[int], str], budget: images.ImageBudget) -> str | list[ContentPart]:
    # A user message's parts in OpenAI's shape: {"type": "text", "text"} and {"type":
    # "image_url", "image_url": {"url", "detail"?}}; text parts alone are joined into text.
    # `detail` is not sent on: no Workers AI model's schema takes it (docs/images.md).
    checked: list[ContentPart] = []
    has_text = False
    for index, part in enumerate(parts):
        at = name(index)
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            checked.append({"type": "text", "text": part["text"]})
            has_text = has_text or bool(part["text"].strip(WHITESPACE))
        elif kind == "image_url" and isinstance(part.get("image_url"), dict):
            detail = part["image_url"].get("detail")
            if detail is not None and detail not in ("auto", "low", "high"):
                raise invalid_request(f'{at}.image_url.detail must be "auto", "low" or "high".', param=f"{at}.image_url.detail")
            url, _ = images.checked_data_url(part["image_url"].get("url"), at, budget)
            checked.append({"type": "image_url", "image_url": {"url": url}})
        else:
            raise invalid_request(f'{at} must be a text part ({{"type": "text", "text": ...}}) or an image part '
                                  f'({{"type": "image_url", "image_url": {{"url": "data:image/...;base64,..."}}}}).', param=at)
    if not any(part["type"] == "image_url" for part in checked):
        # Text alone is sent as text, as before images: every model's schema takes that.
        text = "\n".join(part["text"] for part in checked if part["type"] == "text")
        if not has_text:
            raise invalid_request(f"{where}.content must hold an image or a text part with a character other than whitespace.",
                                  param=f"{where}.content")
        return text
    return checked


def checked_max_tokens(value: Any, config: Config, field: str = "max_tokens") -> int:
    if value is None:
        return config.max_tokens
    if isinstance(value, float) and math.isinf(value):  # 1e400 reads as inf
        raise invalid_request(f"{field} must be between 1 and {config.max_tokens}.", param=field)
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_request(f"{field} must be an integer.", param=field)
    if not 1 <= value <= config.max_tokens:
        raise invalid_request(f"{field} must be between 1 and {config.max_tokens}.", param=field)
    return value


def _resumable(value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise invalid_request("resumable must be true or false.", param="resumable")
    return value


def is_chat_id(value: object) -> bool:
    """An AI SDK chat id this Worker keys a resumable stream by: 1 to 128 ASCII letters,
    digits, `-` or `_` (the SDK's generated ids are 16 such characters)."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_CHAT_ID_CHARS or not value.isascii():
        return False
    return all(char.isalnum() or char in "-_" for char in value)


def checked_number(value: Any, field: str, low: float, high: float) -> float:
    """A JSON number in [low, high] (1e400 reads as inf and is out of range)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid_request(f"{field} must be a number.", param=field)
    # An int is compared as it is: math.isfinite() would convert it to a float, which
    # raises OverflowError for one of hundreds of digits (valid JSON).
    if (isinstance(value, float) and not math.isfinite(value)) or not low <= value <= high:
        raise invalid_request(f"{field} must be between {low:g} and {high:g}.", param=field)
    return float(value)


def checked_sampling(value: Any, field: str, model: str) -> float:
    """A sampling parameter in the range `model` takes (the catalog's); a fallback that
    takes less gets it clamped (chat.model.call)."""
    low, high = catalog.sampling_range(model, field)
    return checked_number(value, field, low, high)


def checked_temperature(value: Any, model: str) -> float | None:
    return None if value is None else checked_sampling(value, "temperature", model)


def validate_ui_chat(payload: Any, config: Config) -> ChatTurn:
    """A chat turn from the AI SDK's `useChat` body (`messages` as UIMessages with `parts`).

    The text parts of a user message become its content, and its `file` parts images
    (an image/* media type, or none: the bytes say what it is; any other is a 400 naming
    the part, never left out). An assistant message is split into steps at its
    `step-start` parts; each step becomes an assistant message with its text and the tool
    calls that have a result, followed by a tool message for each
    (chat.api.tools.ui_tool_exchange). What carries nothing the model call uses
    (reasoning, calls still without a result) is left out, and so is a step with neither
    text nor such calls, so the conversation can go on. Then the same rules as /api/chat
    apply, with field names pointing at the UIMessage.
    """
    # The client's UI messages are bounded too, skipped ones included (docs/openapi.yaml's
    # maxItems); checked_messages then bounds the model messages they become.
    messages = checked_message_list(payload, config)
    plain: list[dict[str, Any]] = []
    positions: list[int] = []
    part_names: dict[tuple[int, int], str] = {}  # (model message, content part) -> the UI part's name
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise invalid_request(f"{where} must be a UI message with a list of parts.", param=where)
        role = message.get("role")
        if role not in ("user", "assistant"):  # a tool's result travels as a part of the assistant's message
            raise invalid_request(f'{where}.role must be "user" or "assistant".', param=f"{where}.role")
        if role == "assistant":
            converted = _ui_assistant_messages(message["parts"], where)
        else:
            content, names = _ui_user_content(message["parts"], where)
            part_names.update({(len(plain), part): name for part, name in enumerate(names)})
            converted = [{"role": role, "content": content}]
        plain.extend(converted)
        positions.extend([index] * len(converted))
    if not plain:
        raise invalid_request("messages holds no message with text.")
    turn = checked_turn(payload, plain, config, position=positions.__getitem__, resumable=_resumable(payload.get("resumable")),
                        counted="model messages once tool calls and results count as theirs",
                        part_name=lambda message, part: part_names[message, part])
    last = messages[-1]
    if last.get("role") == "assistant" and _is_message_id(last.get("id")):
        # The SDK appends the answer to that message when `start` names it; a new id
        # would make it a second message holding the same calls again.
        turn = dataclasses.replace(turn, continues_message=last["id"])
    chat_id = payload.get("id")
    if not is_chat_id(chat_id):
        if turn.resumable:
            raise invalid_request(f"id: a resumable UI chat needs the chat id, 1 to {MAX_CHAT_ID_CHARS} letters, digits, - or _.", param="id")
        return turn
    return dataclasses.replace(turn, chat_id=chat_id)


def _is_message_id(value: object) -> bool:
    # The SDK makes 16-character ids; an app may set its own (UUIDs): the same rule as the
    # ids of tool calls, so that any id a client may send is continued, not replaced.
    return isinstance(value, str) and 0 < len(value) <= tools.MAX_ID_CHARS and value.isprintable()


def _ui_user_content(parts: list[Any], where: str) -> tuple[str | list[Any], list[str]]:
    # A user's text, or, when it attached files, its text and images as OpenAI's parts (the
    # images checked by checked_messages), with each part's name in the UI message.
    if not any(isinstance(part, dict) and part.get("type") == "file" for part in parts):
        return _ui_text(parts, where), []
    content: list[Any] = []
    names: list[str] = []
    for part_index, part in enumerate(parts):
        at = f"{where}.parts[{part_index}]"
        if not isinstance(part, dict):
            continue
        if part.get("type") == "file":
            media_type = part.get("mediaType")
            # The browser's type of a file can be "": then its bytes decide (chat.api.images).
            if not isinstance(media_type, str) or (media_type and not media_type.lower().startswith("image/")):
                raise invalid_request(f"{at}: only images are taken as files ({images.FORMATS_NAMED}), and this part's "
                                      "mediaType is not image/*.", param=at)
            content.append({"type": "image_url", "image_url": {"url": part.get("url")}})
            names.append(at)
        elif part.get("type") == "text":
            content.append({"type": "text", "text": _ui_text([part], where)})
            names.append(at)
    return content, names


def _ui_text(parts: list[Any], where: str) -> str:
    texts: list[str] = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "text":
            if not isinstance(part.get("text"), str):
                raise invalid_request(f"{where}.parts: a text part needs a string text.")
            texts.append(part["text"])
    return "".join(texts)


def _ui_assistant_messages(parts: list[Any], where: str) -> list[dict[str, Any]]:
    # The AI SDK starts each step of a multi-step answer with a `step-start` part: the
    # model's calls of one step and their results come before the text of the next.
    steps: list[list[tuple[int, Any]]] = [[]]
    for part_index, part in enumerate(parts):
        if isinstance(part, dict) and part.get("type") == "step-start":
            steps.append([])
        else:
            steps[-1].append((part_index, part))
    converted: list[dict[str, Any]] = []
    for step in steps:
        content = _ui_text([part for _, part in step], where)
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        ids: set[str] = set()
        for part_index, part in step:
            if not isinstance(part, dict):
                continue
            at = f"{where}.parts[{part_index}]"
            if part.get("type") == "file":
                raise invalid_request(f"{at}: files are taken in user messages only.", param=at)
            exchange = tools.ui_tool_exchange(part, at)
            if exchange is None:
                continue
            call, result = exchange
            # Checked here as well as by checked_messages, so the error names the part.
            if call["id"] in ids:
                raise invalid_request(f"{at}.toolCallId: another call of this step has this id.", param=f"{at}.toolCallId")
            if len(calls) == tools.MAX_CALLS_PER_MESSAGE:
                raise invalid_request(f"{where}.parts: a step holds more than {tools.MAX_CALLS_PER_MESSAGE} tool calls.",
                                      param=f"{where}.parts")
            ids.add(call["id"])
            calls.append(call)
            results.append(result)
        if calls:
            converted.append({"role": "assistant", "content": content, "tool_calls": calls})
            converted.extend(results)
        elif content.strip(WHITESPACE):
            converted.append({"role": "assistant", "content": content})
    return converted
