"""What a turn is made of besides its question: the history file, images and tools."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from clients.chat_cli.stream import REPOSITORY_SOURCE, repository_module


class HistoryError(ValueError):
    """The --history file is not a list of messages."""


class ToolsError(ValueError):
    """The --tools file is not a list of OpenAI function tools."""


def read_history(path: Path) -> list[dict[str, Any]]:
    """Earlier turns: a JSON list of {"role", "content"} objects, or {"messages": [...]}; an
    assistant turn with `tool_calls` may have null content, and `tool_calls` and
    `tool_call_id` are kept as they are (the Worker checks them). A user turn's content may
    be a list of parts, text and image_url (with the "filename" this CLI keeps); its images
    are read by `sendable`. Raises OSError, or ValueError (HistoryError, JSONDecodeError)
    saying what is wrong."""
    if not path.exists():
        return []  # a new conversation: written when its first answer completes
    payload = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(payload, dict):
        payload = payload.get("messages")
    if not isinstance(payload, list):
        raise HistoryError("expected a list of messages, or an object with \"messages\"")
    history = []
    for index, message in enumerate(payload):
        if not (isinstance(message, dict) and isinstance(message.get("role"), str)):
            raise HistoryError(f"message {index} needs a string \"role\"")
        content = message.get("content")
        if message["role"] == "user" and isinstance(content, list):
            content = _history_parts(content, index)
        elif not (isinstance(content, str) or (content is None and "tool_calls" in message)):
            raise HistoryError(f"message {index} needs a string \"content\" (null only with \"tool_calls\"; "
                               "a list of parts only in a user message)")
        history.append({key: content if key == "content" else message[key]
                        for key in ("role", "content", "tool_calls", "tool_call_id") if key in message})
    return history


def _history_parts(parts: list[Any], index: int) -> list[dict[str, Any]]:
    # OpenAI's shape, as this CLI writes it: text parts, and image_url parts with a string
    # url and maybe the file's name. What each image is, the Worker's reader says (sendable).
    checked = []
    for number, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            checked.append({"type": "text", "text": part["text"]})
        elif kind == "image_url" and isinstance(part.get("image_url"), dict) and isinstance(part["image_url"].get("url"), str):
            name = part.get("filename")
            checked.append({"type": "image_url", "image_url": part["image_url"], **({"filename": name} if isinstance(name, str) else {})})
        else:
            raise HistoryError(f"message {index} part {number} must be a text part or an image_url part with a string url")
    return checked


def append_turn(path: Path, history: list[dict[str, Any]], question: dict[str, Any], answer: dict[str, Any]) -> None:
    """Writes the conversation with this turn added (`question`: the user message as the
    history keeps it, images whole), whole (a file that is replaced, never half written),
    so that the next run goes on from it."""
    messages = [*history, question, answer]
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(messages, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, path)


# The Worker's own reader of images, src/chat/api/images.py: the same sniffing, pixel
# reading and bounds as the server, not a copy that could drift from it. It is imported from
# the repository the CLI lives in (docs/cli.md runs it from there), and only by a run that
# has images, so that a run without them starts as fast as before. The import is pure: the
# module and what it pulls in (chat.web.errors, the `sse` package) are plain Python that
# defines constants, tables and classes, with no I/O and nothing read from the environment.
PLACEHOLDER = "[image not re-sent: {}]"


class ImageFileError(ValueError):
    """An --image file that cannot be read, or that the Worker would refuse; the message
    names the file and says why, never with its bytes."""


def image_rules() -> ModuleType:
    """chat.api.images, from the repository's src/. Raises ImageFileError when the CLI runs
    outside its repository (the module is not there)."""
    try:
        return repository_module("chat.api.images")
    except ImportError:
        raise ImageFileError(f"images are checked by the Worker's own reader, {REPOSITORY_SOURCE / 'chat/api/images.py'}, "
                             "which is not there: run the CLI from its repository") from None


def read_images(paths: list[Path]) -> list[dict[str, Any]]:
    """The question's images as the history keeps them, `{"type": "image_url", "image_url":
    {"url": DATA_URL}, "filename": NAME}`, each checked as the Worker checks it (its bytes,
    then the request's bounds: how many, how many bytes in all). Raises ImageFileError
    naming the first file that cannot be read or would be refused."""
    try:
        rules = image_rules()
    except ImageFileError as problem:
        raise ImageFileError(f"--image: {problem}") from None
    budget = rules.ImageBudget()
    parts = []
    for path in paths:
        where = f"--image {path}"
        try:
            with path.open("rb") as file:
                # One byte past the bound is enough for the reader to refuse the file, and a
                # file of any size costs no more than that.
                data = file.read(rules.MAX_IMAGE_BYTES + 1)
        except OSError as problem:
            raise ImageFileError(f"{where}: {problem.strerror or problem}") from None
        try:
            # No media type of its own: the checked URL carries the one the bytes show.
            url, _ = rules.checked_data_url("data:;base64," + base64.b64encode(data).decode("ascii"), where, budget)
        except rules.ApiError as refusal:
            raise ImageFileError(refusal.message) from None
        parts.append({"type": "image_url", "image_url": {"url": url}, "filename": path.name})
    return parts


def user_message(question: str, images: list[dict[str, Any]]) -> dict[str, Any]:
    """The question as the history keeps it: its text, or with images a list of parts, the
    text first."""
    if not images:
        return {"role": "user", "content": question}
    return {"role": "user", "content": [{"type": "text", "text": question}, *images]}


def _images_of(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, list) and any(part.get("type") == "image_url" for part in content)


def sendable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as a request carries them (the question last). Every request holds at
    most the Worker's bounds on images, on the 20th turn as on the first: the images of
    the user messages go newest first (the question's first, each message's in its order)
    while they fit within MAX_IMAGES and MAX_REQUEST_IMAGE_BYTES; from the first that does
    not, it and each older one are sent as a text part in its place, "[image not re-sent:
    NAME, a W×H FORMAT]". So the model sees the latest images, without a gap among them.
    The question's images fit by themselves (read_images checked them). "filename" stays in
    the history. Raises HistoryError for an image the Worker would refuse, naming its
    message and part."""
    if not any(_images_of(message) for message in messages):
        return messages  # nothing to read: the Worker's reader is not even imported
    try:
        rules = image_rules()
    except ImageFileError as problem:
        raise HistoryError(f"it holds images, and {problem}") from None
    sent = list(messages)
    count = size = 0
    fits = True
    for index in reversed(range(len(messages))):
        if not _images_of(messages[index]):
            continue
        parts = []
        for number, part in enumerate(messages[index]["content"]):
            if part["type"] != "image_url":
                parts.append(part)
                continue
            try:
                # A budget of its own: each image is checked alone here; the request's bounds
                # are the rule below.
                url, image = rules.checked_data_url(part["image_url"]["url"], f"message {index} part {number}", rules.ImageBudget())
            except rules.ApiError as refusal:
                raise HistoryError(refusal.message) from None
            fits = fits and count < rules.MAX_IMAGES and size + image.size <= rules.MAX_REQUEST_IMAGE_BYTES
            if fits:
                count, size = count + 1, size + image.size
                parts.append({"type": "image_url", "image_url": {**part["image_url"], "url": url}})
            else:
                # A history written by hand may name none: "image", as the page says then.
                parts.append({"type": "text", "text": PLACEHOLDER.format(f"{part.get('filename') or 'image'}, {image.describe()}")})
        sent[index] = {**messages[index], "content": parts}
    return sent


def read_tools(path: Path) -> list[dict[str, Any]]:
    """Tools to offer the model: a JSON list of OpenAI function tools, `{"type": "function",
    "function": {"name": ..., "description"?: ..., "parameters"?: {...}}}`, or {"tools": [...]}.
    Only the shape is checked here; the Worker's bounds (how many, how big) are its own.
    Raises OSError, or ValueError (ToolsError, JSONDecodeError) saying what is wrong."""
    payload = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(payload, dict):
        payload = payload.get("tools")
    if not isinstance(payload, list) or not payload:
        raise ToolsError("expected a non-empty list of tools, or an object with \"tools\"")
    for index, tool in enumerate(payload):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not (isinstance(tool, dict) and tool.get("type") == "function" and isinstance(function, dict)):
            raise ToolsError(f"tool {index} needs \"type\": \"function\" and a \"function\" object")
        if not (isinstance(function.get("name"), str) and function["name"]):
            raise ToolsError(f"tool {index} needs a \"function\" with a non-empty string \"name\"")
        if "parameters" in function and not isinstance(function["parameters"], dict):
            raise ToolsError(f"tool {index}: \"parameters\" must be a JSON Schema object")
    return payload
