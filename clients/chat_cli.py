#!/usr/bin/env python3
r"""Ask the chat Worker a question and print the answer while it streams; without a
question, hold a conversation (docs/cli.md has it all).

    python clients/chat_cli.py [--url URL] [--model M] [--history FILE.json] [--tools FILE.json]
                               [--image FILE ...] [--cancel-after N] [--timeout S]
                               [--raw | --resume] [--token T] [--plain] [--no-reasoning] ["question"]

stdout gets the answer text as it arrives, plus a final newline when the text did not
end with one; so `... > answer.txt` keeps just the answer, byte for byte. On a terminal
the answer is rendered as markdown while it streams (MarkdownWriter, with rich; --plain
prints it as it comes), reasoning is shown dimmed before it (--no-reasoning hides it),
and the model's text never drives the terminal: each character a terminal would act on
instead of showing is written visibly escaped, as Python writes it in a string (`\x1b` is
four characters there), before any rendering:
the C0 controls but newline and tab (`\x1b`, `\x0d`, `\x08`, `\x07`...),
DEL (`\x7f`), the C1 controls (`\x9b`, a CSI on its own) and the bidi embeddings,
overrides and isolates (`\u202a`-`\u202e`, `\u2066`-`\u2069`). The marks U+200E, U+200F
and U+061C are kept: Arabic and Hebrew text needs them. Tool-call lines stay JSON: there
the same characters get JSON's own escape (`\u001b`, `\u009b`), and the line parses to the
same call. Text the model writes as `\x1b` itself looks the same: it is only text.

stderr gets exactly one status line, always the last line written there:

    complete chunks=N chars=M          exit 0   the answer ended whole: `done` ([DONE] with
                                                --raw) with finish_reason stop, tool_calls,
                                                function_call or none
    cut_short: REASON chunks=N chars=M exit 5   the answer was cut short: REASON is length
                                                (the token limit) or content_filter
    unknown_ending: REASON chunks=N chars=M
                                       exit 5   the model ended for a reason the Worker does
                                                not know (REASON other): maybe not whole
    empty chunks=0 chars=0             exit 5   the model ended whole but sent no text and
                                                no tool call
    cancelled after N chunks           exit 3   --cancel-after N: left after N chunks
    output_closed after N chunks       exit 3   stdout was closed (`| head`): left, quietly
    interrupted after N chunks         exit 130 Ctrl-C (SIGINT): left, no traceback
    stream_error: CODE                 exit 4   an `error` event, an HTTP error, or a client code:
                                                truncated, timeout, connection_failed,
                                                http_error, unexpected_response, malformed_stream

The four endings add ` tool_calls=K` when the model made K tool calls and ` skipped=S`
when S frames of the model's output could not be read (`done.skipped`), then, when the
Worker said them, ` model=M` (from `meta`), ` tokens=P+C` (`done.usage`) and, for a
complete answer, ` finish=R` (its finish_reason); the exit status
stays the ending's, and the line before the status line says
`warning: S frames of the model's output could not be read; the answer may have gaps`.
When the server gave a message (an `error` event, a JSON error body) it comes on the line
before the status line, as `error: MESSAGE (request ID[, retry after S s])`. When stderr is
a terminal these lines are written in reverse video (SGR 7), which model text cannot
produce, and always start a line of their own. Exit status 2 means bad usage or an
unreadable --history, --tools or --image file (nothing is sent then).
`chars` counts Unicode code points.
--timeout bounds the wait for each next event; `: ping` keep-alives do not count as events.
--token defaults to the CHAT_TOKEN environment variable (a flag shows up in `ps`).

--history FILE.json holds the conversation so far (missing: a new one): its turns are sent
before the question, and a complete answer appends the question and the answer to it, so
the next run goes on from there (skipped frames or not). A turn that did not complete is
not written: neither a cut-short or empty one nor one that ended for an unknown reason.

--raw reads Workers AI's own frames: the last finish_reason of OpenAI-style chunks is read
as above (with other servers' names for the same endings: max_tokens is length, eos and
end_turn are stop; "error" is `stream_error: generation_failed`), a frame that is not a
JSON object is counted as skipped, and an in-band error object (`{"error": ...}`) is
`stream_error: generation_failed`. Native frames carry no finish_reason: their answers
end `complete`.

--resume asks for a resumable answer: when the connection drops (or no event comes for
--timeout seconds) the client reconnects with Last-Event-ID and goes on where it left off,
up to RESUME_ATTEMPTS times in a row, and the status line ends with `resumed=K`, the
number of reconnections. With --cancel-after, Ctrl-C or a closed stdout the answer is
stopped on the server (DELETE): leaving alone would not stop a resumable answer.

--tools FILE.json offers the model tools: a JSON list in OpenAI's function-tool shape
(`[{"type": "function", "function": {"name": ..., "parameters": {...}}}]`), or an object
with "tools". The client does not run them: each call the model makes is printed on stdout,
when it is complete, as one JSON line on its own,

    {"tool_call": {"id": "call_1", "name": "current_time", "arguments": "{\"timezone\":\"UTC\"}", "input": {"timezone": "UTC"}}}

with `"input": null` and an `input_error` when the arguments are not a JSON object. A history
file may hold earlier calls and results (assistant messages with `tool_calls`, `tool`
messages with `tool_call_id`): they are sent as they are.

--image FILE (repeatable) attaches an image to the question: the user message becomes a
list of OpenAI content parts, the question's text part first, then one part per image in
the order given, `{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}`,
its media type the one the bytes show. Each file is checked before anything is sent, by
the Worker's own reader (src/chat/api/images.py, imported from the repository, and only
when a run has images): a PNG, JPEG, WebP or GIF, sniffed from the bytes, its header whole,
at most MAX_IMAGE_BYTES (5 MiB) each, MAX_REQUEST_IMAGE_BYTES (6 MiB) in all, MAX_IMAGES (8),
MAX_IMAGE_SIDE (8192) pixels a side and MAX_IMAGE_PIXELS (4096*4096) in all. A file past one
is a usage error naming it (exit 2). The history file keeps each image as its data URL,
with its file name (`"filename"`, not sent). Each request holds at most the Worker's bounds
however long the conversation: its images, the question's first, then the history's
newest first, are sent while they fit (8 images, 6 MiB); from the first that does not,
each older one is sent as a text part in its place, "[image not re-sent: cat.png, a 3×2 PNG]".
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import io
import json
import os
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import httpx

DEFAULT_URL = "http://127.0.0.1:8787"
# OpenAI's reasoning_effort values; "low" by default: a thinking model spends its reasoning
# from the answer's token budget, and short thinking leaves room for the answer.
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
DEFAULT_REASONING_EFFORT = "low"
MAX_LINE_CHARS = 1024 * 1024
MAX_ERROR_BODY = 64 * 1024

EXIT_COMPLETE, EXIT_USAGE, EXIT_CANCELLED, EXIT_STREAM_ERROR = 0, 2, 3, 4
EXIT_NOT_WHOLE = 5  # the answer ended, but not as a whole answer: cut short, or for a reason not known
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
RESUME_ATTEMPTS = 5  # reconnections in a row without a new event before giving up
RESUME_BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 4.0)


# How an answer that ended with `done` ([DONE] with --raw) ended, by its finish_reason
# (docs/protocol.md). Raw frames are the model's own, so other OpenAI-compatible servers'
# names for the same endings are read too (the Worker maps them for /api/chat): Anthropic's
# end_turn, max_tokens and stop_sequence, TGI's eos_token, llama.cpp's eos.
WHOLE_ENDINGS = frozenset({"stop", "tool_calls", "function_call", "eos", "eos_token", "end_turn", "stop_sequence"})
CUT_SHORT_ENDINGS = {"length": "length", "max_tokens": "length", "content_filter": "content_filter"}
# vLLM streams a generation that failed as finish_reason "error"; the Worker sends an
# `error` event instead (older Workers sent `done` with it).
FAILED_ENDING = "error"
SHOWN_REASON = re.compile(r"[a-z_]{1,32}")  # an unknown reason is shown as sent when it reads like one

# What a terminal acts on instead of showing: the C0 controls but newline and tab, DEL, and
# the C1 controls (ECMA-48: ESC starts a sequence, U+009B is a CSI on its own, U+009D an
# OSC), and the bidi embeddings, overrides and isolates, which reorder the text after them
# on display (UAX #9; Trojan Source, CVE-2021-42574). The marks U+200E, U+200F and U+061C
# stay: Arabic and Hebrew text needs them often, and a mark moves no letters, only the
# digits and punctuation between it and the nearest letters, and never past its line's end.
ACTED_ON = (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
# On a terminal each is written as Python writes it in a string (`\x1b`, `\u202e`); in a
# tool-call line as JSON does (`\u001b`), so that the line still parses to the same call.
TEXT_ESCAPES = {point: f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}" for point in ACTED_ON}
JSON_ESCAPES = {point: f"\\u{point:04x}" for point in ACTED_ON}
# The CLI's own lines on a terminal stderr: reverse video (SGR 7), then every attribute
# off. The model cannot write one: its ESC never reaches the terminal.
OWN_LINE = "\x1b[7m{}\x1b[0m"


def visible(text: str) -> str:
    """`text` with each character in ACTED_ON written visibly escaped. One character at a
    time, so a sequence split across deltas is escaped as well as a whole one."""
    return text.translate(TEXT_ESCAPES)


class TextSink(Protocol):
    def write(self, text: str, /) -> int: ...
    def flush(self) -> None: ...


# Reasoning on a terminal: dim (SGR 2), then normal intensity (SGR 22) after each piece,
# so that a Ctrl-C between pieces leaves the terminal as it was.
DIM, NOT_DIM = "\x1b[2m", "\x1b[22m"


class AnswerWriter:
    """Where the answer goes (stdout): the model's text as it arrives, and each complete
    tool call as a JSON line of its own. With `terminal`, nothing the model sent can drive
    the terminal (see `visible`), and reasoning is shown dimmed and apart before the answer
    (unless `reasoning` is False); without, the text is written exactly as it came and
    reasoning not at all. Remembers whether the output so far ends a line. Raises what the
    stream raises (BrokenPipeError when stdout was closed)."""

    def __init__(self, stream: TextSink, *, terminal: bool = False, reasoning: bool = True) -> None:
        self._stream = stream
        self._terminal = terminal
        self._show_reasoning = terminal and reasoning
        self._reasoning_shown = False  # and not yet set apart from what follows
        self.needs_newline = False

    def reasoning(self, text: str) -> None:
        if self._show_reasoning:
            self._write(visible(text), DIM, NOT_DIM)
            self._reasoning_shown = True

    def text(self, text: str) -> None:
        self._set_apart()
        self._write(visible(text) if self._terminal else text)

    def tool_call(self, call: dict[str, Any]) -> None:
        self._set_apart()
        self._write(("\n" if self.needs_newline else "") + tool_call_line(call, terminal=self._terminal) + "\n")

    def finish(self) -> None:
        """Ends the last line when the text did not, so that `> file` ends with a newline
        and a status line on the same terminal starts a line of its own."""
        if self.needs_newline:
            self._write("\n")

    def abandon(self) -> None:
        """Nothing to undo: each write left the terminal as it was."""

    def _set_apart(self) -> None:
        if self._reasoning_shown:
            self._reasoning_shown = False
            self._write(("\n" if self.needs_newline else "") + "\n")  # a blank line after the reasoning

    def _write(self, text: str, before: str = "", after: str = "") -> None:
        if text:
            self.needs_newline = not text.endswith("\n")
            self._stream.write(before + text + after)
            self._stream.flush()


def tool_call_line(call: dict[str, Any], *, terminal: bool) -> str:
    """A complete tool call as the JSON line printed for it. On a terminal, what it would
    act on gets JSON's own escape: the characters are all inside strings, so the line still
    parses to the same call."""
    line = json.dumps({"tool_call": call}, ensure_ascii=False)
    return line.translate(JSON_ESCAPES) if terminal else line


class MarkdownWriter:
    """The answer rendered as markdown while it streams, for stdout on a terminal, with
    rich (a dependency of the CLI only). As the chat page does, a block the model has
    finished (the text before the last top-level block) is rendered once and printed for
    good; only the open block is redrawn, in a live region at the bottom that shows its
    last screenful. So the work per redraw does not grow with the answer.

    Safe as the page is, by construction: the text is escaped by `visible` before it is
    parsed, and each rendered line again after (markdown-it turns `&#x202e;` into the
    character itself), so only rich's own styling reaches the terminal. Raw HTML is text,
    an image is a link, and a link shows its address, never as a terminal hyperlink.
    Nothing the model wrote is hidden: a block is shown as its plain source when its
    rendering lost a word of it (`_lines`), when it is nested deeper than markdown-it
    parses (it drops the rest), or when it is larger than a render should take. Reasoning
    is shown dimmed and apart, as text."""

    REFRESHES_PER_S = 10
    # Looking for finished blocks parses the open text: not on every piece, and never more
    # than a tenth of the time (a 2,000-row table is one block, and takes 0.2 s to parse).
    SPLIT_EVERY_S = 0.1
    SPLIT_SHARE = 0.1
    # Text rendered at once is at most this long (the page's bound too): a longer block is
    # plain text, a longer run of finished blocks is rendered in groups. rich lays out
    # 100,000 characters of paragraphs in about half a second here, 5 MB in twenty.
    MAX_RENDERED_CHARS = 100_000
    # The open block is previewed as plain text past either (a growing 2,000-row table is
    # a full table layout on every redraw), then rendered once when it ends.
    MAX_PREVIEW_LINES = 200
    MAX_PREVIEW_CHARS = 20_000
    MAX_NESTING = 20  # markdown-it's own default: deeper, it drops the rest of the text

    def __init__(self, stream: TextSink, *, reasoning: bool = True) -> None:
        from markdown_it import MarkdownIt
        from rich.console import Console, Group
        from rich.live import Live
        from rich.markdown import Markdown
        from rich.text import Text

        self._markdown_class, self._text, self._group = Markdown, Text, Group
        self._console = Console(file=stream, highlight=False, emoji=False)  # type: ignore[arg-type]
        # rich's own parser configuration (commonmark, tables, strikethrough), with raw
        # HTML as text and images as links: rich shows neither HTML nor an image's address.
        self._parser = MarkdownIt("commonmark", {"html": False, "maxNesting": self.MAX_NESTING})
        self._parser.enable(["strikethrough", "table"]).disable("image")
        self._show_reasoning = reasoning
        self._kind = ""  # "answer" or "reasoning": what the pending text is
        self._pending: list[str] = []  # escaped text not yet printed for good
        self._printed = False  # something was printed for good: the next print is set apart
        self._split_at = 0.0  # when to look for finished blocks next
        self._live = Live(console=self._console, auto_refresh=True, refresh_per_second=self.REFRESHES_PER_S,
                          transient=True, redirect_stdout=False, redirect_stderr=False, get_renderable=self._preview)

    def reasoning(self, text: str) -> None:
        if self._show_reasoning:
            self._add("reasoning", visible(text))

    def text(self, text: str) -> None:
        self._add("answer", visible(text))
        started = time.monotonic()
        if started >= self._split_at:
            self._print_finished_blocks()
            took = time.monotonic() - started
            self._split_at = started + max(self.SPLIT_EVERY_S, took / self.SPLIT_SHARE)

    def tool_call(self, call: dict[str, Any]) -> None:
        self._print_pending()
        self._print(self._text(tool_call_line(call, terminal=True)), soft_wrap=True)

    def finish(self) -> None:
        """Prints what is pending for good and ends the live region."""
        self._print_pending()
        self._live.stop()

    def abandon(self) -> None:
        """Ends the live region (the cursor shown again), printing nothing more: after a
        Ctrl-C while the last block was rendered, or a failure."""
        self._live.stop()

    def _add(self, kind: str, text: str) -> None:
        if kind != self._kind:
            self._print_pending()
            self._kind = kind
        self._pending.append(text)
        if not self._live.is_started:
            self._live.start()

    def _print_finished_blocks(self) -> None:
        source = "".join(self._pending)
        tokens = self._parser.parse(source)
        starts = [tokens[at].map[0] for at in top_level_blocks(tokens)]
        if len(starts) < 2:
            return
        lines = source.split("\n")
        self._pending = ["\n".join(lines[starts[-1]:])]
        # Rendered in groups of whole blocks, each at most MAX_RENDERED_CHARS when it can be.
        # The first group starts at the first line: what came before the first block (a
        # reference definition) is shown with it.
        group_start, size = 0, 0
        for first, after in zip(starts, starts[1:], strict=False):
            block = sum(len(line) + 1 for line in lines[first:after])
            if size and size + block > self.MAX_RENDERED_CHARS:
                self._print(*self._markdown("\n".join(lines[group_start:first])))
                group_start, size = first, 0
            size += block
        self._print(*self._markdown("\n".join(lines[group_start:starts[-1]])))

    def _print_pending(self) -> None:
        source, self._pending = "".join(self._pending), []
        if source.strip():
            if self._kind == "reasoning":
                self._print(self._text(source.strip("\n"), style="dim"))
            else:
                self._print(*self._markdown(source))

    def _markdown(self, source: str) -> list[Any]:
        """`source` rendered: as markdown, but a top-level block nested past what
        markdown-it parses (it would drop the rest) as plain text, and all of it as plain
        text when it is too long to render at once. One renderable for each part; a
        markdown one carries its source (`_print` checks it lost nothing)."""
        if len(source) > self.MAX_RENDERED_CHARS:
            return [self._text(source)]
        # Block by block, so that what one block's rendering shows twice (an autolink's
        # address) cannot make up for what another's lost.
        tokens = self._parser.parse(source)
        lines, parts = source.split("\n"), []
        starts = top_level_blocks(tokens)
        if not starts:
            return [self._text(source.strip("\n"))]  # no block at all: nothing, or a definition alone
        for number, (start, end) in enumerate(zip(starts, [*starts[1:], len(tokens)], strict=True)):
            # A block's source runs to the next block's first line: what makes no token (a
            # reference definition) is in the block before it, and checked with it.
            first = 0 if number == 0 else tokens[start].map[0]
            last = tokens[end].map[0] if end < len(tokens) else len(lines)
            block = tokens[start:end]
            if any(token.level >= self.MAX_NESTING - 1 for token in block):
                # What markdown-it dropped is past the block's last parsed line: the rest.
                parts.append(self._text("\n".join(lines[first:]).strip("\n")))
                break
            parts.append(self._rendered("\n".join(lines[first:last]), block))
        return parts

    def _rendered(self, source: str, tokens: list[Any]) -> Any:
        rendered = self._markdown_class("", hyperlinks=False)
        rendered.markup, rendered.parsed = source, tokens  # parsed here, as configured above
        return rendered

    def _lines(self, renderable: Any) -> list[Any]:
        """`renderable` as the lines it prints, without blank lines before and after. A
        markdown block whose rendering lost a letter or digit of its source is the source
        as text instead: rich cuts a table cell that does not fit with "…" (a link's
        domain with it), a block nested narrower than a character prints nothing, and
        markdown shows neither a link's title nor a reference definition nor what a
        table row has past its header. Letters, not words: a line wrapped in the middle
        of a run of Chinese, or markup inside one, loses none."""
        lines = [self._joined(line) for line in self._console.render_lines(renderable, pad=False, new_lines=False)]
        if isinstance(renderable, self._markdown_class):
            shown = Counter(LETTER.findall("\n".join(line.plain for line in lines)))
            source = Counter(LETTER.findall(renderable.markup))
            for token in renderable.parsed:
                if token.type == "fence":  # the language picks the highlighting; rich shows it not
                    source.subtract(LETTER.findall(token.info.split(maxsplit=1)[0] if token.info.strip() else ""))
                elif token.type == "list_item_open":  # rich numbers an ordered list itself
                    source.subtract(LETTER.findall(token.info))
                for child in token.children or ():
                    if child.type == "link_open" and child.markup == "autolink":
                        shown.subtract(LETTER.findall(str(child.attrs.get("href", ""))))  # shown twice: once counts
            if source - shown:
                return self._lines(self._text(renderable.markup.strip("\n")))
        while lines and not lines[0].plain.strip():
            lines.pop(0)
        while lines and not lines[-1].plain.strip():
            lines.pop()
        return lines

    def _print(self, *renderables: Any, soft_wrap: bool = False) -> None:
        """Prints for good, above the live region, each renderable set apart from what came
        before by one blank line, as rich sets blocks apart within one rendering."""
        for renderable in renderables:
            # A tool call's JSON line is printed as it is: the terminal wraps it, not rich.
            lines = [renderable] if soft_wrap else self._lines(renderable)
            if not lines:
                continue
            if self._printed:
                self._console.print()
            self._printed = True
            for line in lines:
                self._console.print(line, soft_wrap=True)

    def _preview(self) -> Any:
        """The live region: the last screenful of the pending text, rendered (called by
        rich's refresh, at most REFRESHES_PER_S times a second)."""
        source = "".join(self._pending)
        width, height = self._console.size.width, max(self._console.size.height - 2, 1)
        if self._kind == "answer" and len(source) <= self.MAX_PREVIEW_CHARS and source.count("\n") < self.MAX_PREVIEW_LINES:
            rendered = self._console.render_lines(self._group(*self._markdown(source)), pad=False)
        else:
            # The last screenful of characters, as text: a single huge line costs no more.
            last = "\n".join(source[-width * height:].split("\n")[-height:])
            rendered = self._console.render_lines(self._text(last, style="dim" if self._kind == "reasoning" else ""), pad=False)
        return self._text("\n").join(self._joined(line) for line in rendered[-height:])

    def _joined(self, segments: list[Any]) -> Any:
        """One rendered line as a Text, its styles kept, and what a terminal would act on
        escaped again: markdown-it decodes character references after `visible`."""
        return self._text.assemble(*((visible(segment.text), segment.style) for segment in segments))


Writer = AnswerWriter | MarkdownWriter


def top_level_blocks(tokens: list[Any]) -> list[int]:
    """The indexes of the tokens that open a top-level block. Their `map` is the block's
    [first, last) source lines: markdown-it counts lines at "\n" only, and `visible` has
    escaped every "\r"."""
    return [at for at, token in enumerate(tokens) if token.level == 0 and token.nesting >= 0 and token.map]


class MalformedStream(Exception):
    """The body cannot be read as an event stream (a line over the cap)."""


# --- reading the event stream (no I/O) ----------------------------------------------------

# The project's own event-stream parser (src/sse, plain Python with no I/O: the one the
# Worker reads Workers AI with), imported from the repository the CLI lives in, as the
# image rules are. One reader of the WHATWG rules, not a second copy that could drift.
REPOSITORY_SOURCE = Path(__file__).resolve().parent.parent / "src"


def repository_module(name: str) -> ModuleType:
    """A module of the Worker's src/. Raises ImportError when the CLI runs outside its
    repository."""
    if str(REPOSITORY_SOURCE) not in sys.path:
        sys.path.insert(0, str(REPOSITORY_SOURCE))
    return import_module(name)


try:
    sse = repository_module("sse")
except ImportError:
    print(f"chat_cli: the event-stream parser, {REPOSITORY_SOURCE / 'sse'}, is not there: run the CLI from its repository",
          file=sys.stderr)
    raise SystemExit(2) from None  # EXIT_USAGE
Event = sse.Event


def event_parser() -> Any:
    """A parser for one response body; a line or an event over MAX_LINE_CHARS is a
    MalformedStream (the Worker's events are far smaller)."""
    return sse.EventStreamParser(max_line_bytes=MAX_LINE_CHARS, max_event_chars=MAX_LINE_CHARS)


# The kinds of outcome for an answer that ended with `done` ([DONE] with --raw).
ENDINGS = ("complete", "cut_short", "unknown_ending", "empty")


@dataclass(frozen=True, kw_only=True)
class Outcome:
    kind: str  # one of ENDINGS, or "cancelled", "output_closed", "interrupted" or "error"
    chunks: int
    chars: int
    tool_calls: int = 0  # complete tool calls the answer made
    finish_reason: str | None = None  # of cut_short and unknown_ending: the reason shown
    skipped: int = 0  # upstream frames that could not be read (`done.skipped`)
    code: str | None = None
    message: str | None = None
    request_id: str | None = None
    retry_after: str | None = None
    resumed: int | None = None  # reconnections, with --resume
    answer: dict[str, Any] | None = None  # a complete answer as an assistant message, for --history
    model: str | None = None  # the model that answered, as `meta` named it
    tokens: tuple[int, int] | None = None  # prompt and completion tokens, as `done` counted them
    stopped_by: str | None = None  # of a complete answer: the finish_reason given

    @property
    def status_line(self) -> str:
        if self.kind in ENDINGS:
            line = self.kind if self.finish_reason is None else f"{self.kind}: {self.finish_reason}"
            line += f" chunks={self.chunks} chars={self.chars}"
            if self.tool_calls:
                line += f" tool_calls={self.tool_calls}"
            if self.skipped:
                line += f" skipped={self.skipped}"
            if self.model is not None:
                line += f" model={self.model}"
            if self.tokens is not None:
                line += f" tokens={self.tokens[0]}+{self.tokens[1]}"
            if self.stopped_by is not None:
                line += f" finish={self.stopped_by}"
        elif self.kind in ("cancelled", "output_closed", "interrupted"):
            line = f"{self.kind} after {self.chunks} chunks"
        else:
            line = f"stream_error: {self.code}"
        return line if self.resumed is None else f"{line} resumed={self.resumed}"

    def report(self, *, terminal: bool = False) -> list[str]:
        """What stderr gets: a warning when frames were skipped, the server's message when
        it gave one, and the status line, always last. For a terminal each line is the
        CLI's own style, and the server's words in it are escaped as model text is."""
        lines = []
        if self.skipped:
            frames = "1 frame" if self.skipped == 1 else f"{self.skipped} frames"
            lines.append(f"warning: {frames} of the model's output could not be read; the answer may have gaps")
        if self.message or self.retry_after:
            details = ", ".join(part for part in (
                f"request {self.request_id}" if self.request_id else "",
                f"retry after {self.retry_after} s" if self.retry_after else "",
            ) if part)
            lines.append(f"error: {self.message or self.code}" + (f" ({details})" if details else ""))
        lines.append(self.status_line)
        # One line each, whatever the server's message holds: a newline of its own would
        # start a line that looks like the CLI's (the status line is the last line).
        # Escaped also when stderr is a file: `cat` of a log would act on them all the same.
        lines = [visible(line.replace("\n", "\\n")) for line in lines]
        return [OWN_LINE.format(line) for line in lines] if terminal else lines

    @property
    def exit_code(self) -> int:
        codes = {"complete": EXIT_COMPLETE, "cut_short": EXIT_NOT_WHOLE, "unknown_ending": EXIT_NOT_WHOLE, "empty": EXIT_NOT_WHOLE,
                 "cancelled": EXIT_CANCELLED, "output_closed": EXIT_CANCELLED, "interrupted": EXIT_INTERRUPTED}
        return codes.get(self.kind, EXIT_STREAM_ERROR)


@dataclass(frozen=True, kw_only=True)
class Reading:
    """What one event gives: answer text, a complete tool call (the JSON object printed as
    {"tool_call": ...}), or the outcome a terminal event brings."""

    text: str = ""
    reasoning: str = ""  # shown apart on a terminal, never part of the answer
    tool_call: dict[str, Any] | None = None
    outcome: Outcome | None = None


NOTHING = Reading()
# A letter or digit, for checking that a rendering lost none (markdown's own marks, `_`
# among them, are neither).
LETTER = re.compile(r"[^\W_]")
# What the server's words must look like to be shown on stderr (else they are left out):
# a model's name, an error code, a request id, a Retry-After (seconds or an HTTP date).
SHOWN_MODEL = re.compile(r"[@A-Za-z0-9._:/-]{1,128}")
SHOWN_CODE = re.compile(r"[a-z0-9_]{1,64}")
SHOWN_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
SHOWN_RETRY = re.compile(r"[A-Za-z0-9 ,:]{1,64}")


def shown(value: object, pattern: re.Pattern[str]) -> str | None:
    """`value` when it is a string that reads as `pattern` says, else None."""
    return value if isinstance(value, str) and pattern.fullmatch(value) else None


class AnswerReader:
    """Reads one answer's events; `take` returns what an event gives (text, a tool call, or
    the outcome). Subclasses know one wire format."""

    def __init__(self) -> None:
        self.chunks = 0
        self.chars = 0
        self.tool_calls = 0
        self.request_id: str | None = None
        self.stream_id: str | None = None  # a resumable answer's name, from `meta`
        self.model: str | None = None  # the model that answered, from `meta`, when it reads like a name
        self.tokens: tuple[int, int] | None = None  # from `done`'s usage
        self.last_event_id = ""  # of the last event taken: where a resumed answer goes on from
        self._text: list[str] = []  # the answer, for --history
        self._calls: list[dict[str, Any]] = []

    def take(self, event: Any) -> Reading:
        """`event`: an sse.Event."""
        self.last_event_id = event.id
        reading = self._interpret(event)
        if reading.text:
            self.chunks += 1
            self.chars += len(reading.text)  # code points, as the protocol's `chars`
            self._text.append(reading.text)
        if reading.tool_call is not None:
            self.tool_calls += 1
            call = reading.tool_call
            self._calls.append({"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}})
        return reading

    def answer(self) -> dict[str, Any]:
        """The answer so far as the assistant message a history holds."""
        text = "".join(self._text)
        if not self._calls:
            return {"role": "assistant", "content": text}
        return {"role": "assistant", "content": text or None, "tool_calls": list(self._calls)}

    def _interpret(self, event: Any) -> Reading:
        raise NotImplementedError

    def outcome(self, kind: str, **fields: Any) -> Outcome:
        fields.setdefault("request_id", self.request_id)
        if kind == "complete":
            fields["answer"] = self.answer()  # only a whole answer goes into --history
        return Outcome(kind=kind, chunks=self.chunks, chars=self.chars, tool_calls=self.tool_calls,
                       model=self.model, tokens=self.tokens, **fields)

    def ended(self, finish_reason: object, skipped: int) -> Outcome:
        """The outcome of an answer that ended with `done` ([DONE] with --raw), by its
        finish_reason (None or "" when the model did not say)."""
        reason = finish_reason if isinstance(finish_reason, str) or finish_reason is None else "other"
        if not reason or reason in WHOLE_ENDINGS:
            # Ended by the model, but with nothing in it (no text, no call): not an answer
            # anyone asked for, and as the page does, not shown as one.
            whole = self.chars or self.tool_calls
            if not whole:
                return self.outcome("empty", skipped=skipped)
            return self.outcome("complete", skipped=skipped, stopped_by=reason if reason and SHOWN_REASON.fullmatch(reason) else None)
        if reason in CUT_SHORT_ENDINGS:
            return self.outcome("cut_short", finish_reason=CUT_SHORT_ENDINGS[reason], skipped=skipped)
        if reason == FAILED_ENDING:
            return self.outcome("error", code="generation_failed")
        shown = reason if SHOWN_REASON.fullmatch(reason) else "other"
        return self.outcome("unknown_ending", finish_reason=shown, skipped=skipped)


class ProtocolReader(AnswerReader):
    """This project's protocol (docs/protocol.md): meta, delta, reasoning, tool calls, done,
    error. Of a tool call only its complete form (`tool_call`) is taken: the start and the
    argument fragments are for clients that show a call while it is written."""

    def _interpret(self, event: Any) -> Reading:
        try:
            data = json.loads(event.data)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
            raise MalformedStream("an event's data is not JSON") from None
        if not isinstance(data, dict):
            raise MalformedStream("an event's data is not an object")
        if event.type == "meta" and isinstance(data.get("request_id"), str):
            self.request_id = shown(data["request_id"], SHOWN_ID)
            if isinstance(data.get("stream_id"), str):
                self.stream_id = data["stream_id"]
            model = data.get("model")
            self.model = model if isinstance(model, str) and SHOWN_MODEL.fullmatch(model) else None
        elif event.type == "delta" and isinstance(data.get("text"), str):
            return Reading(text=data["text"])
        elif event.type == "reasoning" and isinstance(data.get("text"), str):
            return Reading(reasoning=data["text"])
        elif event.type == "tool_call":
            return Reading(tool_call=_tool_call(data))
        elif event.type == "done":
            skipped = data.get("skipped")
            counted = skipped if isinstance(skipped, int) and not isinstance(skipped, bool) and skipped > 0 else 0
            self.tokens = _tokens(data.get("usage"))
            return Reading(outcome=self.ended(data.get("finish_reason"), counted))
        elif event.type == "error":
            code = shown(data.get("code"), SHOWN_CODE) or "internal_error"
            message = data.get("message") if isinstance(data.get("message"), str) else None
            return Reading(outcome=self.outcome("error", code=code, message=message,
                                                request_id=shown(data.get("request_id"), SHOWN_ID) or self.request_id))
        return NOTHING  # unknown events are ignored (rule 3)


def _tokens(usage: object) -> tuple[int, int] | None:
    """(prompt, completion) tokens of a `done` event's usage; None when it has no counts."""
    if not isinstance(usage, dict):
        return None
    counts = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if all(isinstance(count, int) and not isinstance(count, bool) and 0 <= count < 2**53 for count in counts):
        return counts[0], counts[1]  # type: ignore[return-value]
    return None


def _tool_call(data: dict[str, Any]) -> dict[str, Any] | None:
    """The call a `tool_call` event carries, as printed; None when a field is missing or of
    the wrong type (the event is then skipped, as a delta without text is)."""
    if not all(isinstance(data.get(key), str) for key in ("call_id", "name", "arguments")):
        return None
    call = {"id": data["call_id"], "name": data["name"], "arguments": data["arguments"]}
    if isinstance(data.get("input"), dict) and "input_error" not in data:
        return {**call, "input": data["input"]}
    why = data.get("input_error")
    return {**call, "input": None, "input_error": why if isinstance(why, str) else "not a JSON object"}


class RawReader(AnswerReader):
    """/api/chat/raw: Workers AI's own frames, `data: {"response": ...}` and `data: [DONE]`
    (OpenAI-style `chat.completion.chunk` frames are read too, with their finish_reason).
    Without [DONE] the answer is not complete: raw frames have no error event, but an
    in-band error object (vLLM's `{"error": {...}}`, or `{"object": "error", ...}`) ends
    the answer as failed. A frame that is not a JSON object is counted as skipped."""

    def __init__(self) -> None:
        super().__init__()
        self._finish_reason: object = None  # the last one a frame gave
        self._skipped = 0

    def _interpret(self, event: Any) -> Reading:
        if event.data.strip() == "[DONE]":
            return Reading(outcome=self.ended(self._finish_reason, self._skipped))
        try:
            frame = json.loads(event.data)
        except (ValueError, RecursionError):
            frame = None
        if not isinstance(frame, dict):
            self._skipped += 1
            return NOTHING
        if frame.get("error") not in (None, False, "") or frame.get("object") == "error":
            return Reading(outcome=self.outcome("error", code="generation_failed"))  # its text is the provider's
        self.tokens = _tokens(frame.get("usage")) or self.tokens
        model = frame.get("model")
        if isinstance(model, str) and SHOWN_MODEL.fullmatch(model):
            self.model = model
        choices = frame.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        for finish_reason in (frame.get("finish_reason"), choice.get("finish_reason")):
            if finish_reason is not None and finish_reason != "":
                self._finish_reason = finish_reason
        response = frame.get("response")
        if isinstance(response, str):
            return Reading(text=response)
        if isinstance(response, int | float) and not isinstance(response, bool):
            return Reading(text=str(response))
        delta = choice.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            return Reading(text=delta["content"])
        return NOTHING


# --- the request --------------------------------------------------------------------------


class TimedOut(Exception):
    pass


class Deadline:
    """The time left to wait for the next event; None waits for ever."""

    def __init__(self, seconds: float | None) -> None:
        self._seconds = seconds
        self._at = 0.0
        self.restart()

    def restart(self) -> None:
        if self._seconds is not None:
            self._at = time.monotonic() + self._seconds

    async def wait(self, awaitable: Any) -> Any:
        if self._seconds is None:
            return await awaitable
        left = self._at - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return await asyncio.wait_for(awaitable, left)
        except TimeoutError:
            raise TimedOut from None


async def http_error(response: httpx.Response, deadline: Deadline) -> Outcome:
    body = b""
    chunks = response.aiter_bytes()
    try:
        while len(body) <= MAX_ERROR_BODY:
            body += await deadline.wait(anext(chunks))
    except (StopAsyncIteration, TimedOut, httpx.TransportError):
        pass  # what arrived is all there is to read
    code, message, request_id = "http_error", f"The server answered {response.status_code}.", shown(response.headers.get("x-request-id"), SHOWN_ID)
    try:
        payload = json.loads(body)
        if shown(payload.get("error", {}).get("code"), SHOWN_CODE):
            code = payload["error"]["code"]
            given = payload["error"].get("message")
            message = given if isinstance(given, str) and given else message
            request_id = shown(payload.get("request_id"), SHOWN_ID) or request_id
    except (ValueError, AttributeError, RecursionError):
        pass  # not our JSON error: keep http_error
    return Outcome(kind="error", chunks=0, chars=0, code=code, message=message, request_id=request_id,
                   retry_after=shown(response.headers.get("retry-after"), SHOWN_RETRY))


async def ask(
    url: str, messages: list[dict[str, Any]], *, out: TextSink | Writer, raw: bool = False, token: str | None = None,
    cancel_after: int | None = None, timeout: float | None = None, resume: bool = False,
    reasoning_effort: str | None = DEFAULT_REASONING_EFFORT, tools: list[dict[str, Any]] | None = None,
    model: str | None = None, reader: AnswerReader | None = None,
) -> Outcome:
    """Stream one answer to `out` (its text, and each complete tool call as a JSON line);
    returns how it ended. Never raises for network or server behaviour."""
    base = url.rstrip("/")
    writer = out if isinstance(out, AnswerWriter | MarkdownWriter) else AnswerWriter(out)
    path = "/api/chat/raw" if raw else "/api/chat"
    headers = {"accept": "text/event-stream", "content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    reader = reader or (RawReader() if raw else ProtocolReader())
    deadline = Deadline(timeout)
    body: dict[str, Any] = {"messages": messages, **({"resumable": True} if resume else {})}
    if reasoning_effort is not None:
        body["reasoning_effort"] = reasoning_effort
    if tools is not None:
        body["tools"] = tools
    if model is not None:
        body["model"] = model
    # httpx's own timeouts would count the Worker's pings as progress; the deadline does not.
    async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=timeout or 30.0)) as client:
        request = client.build_request("POST", base + path, json=body, headers=headers)

        async def stop_on_server() -> None:
            # Leaving does not stop a resumable answer: this does, sent while the
            # connection is still open (the stop then reaches the model at once).
            try:
                await client.delete(f"{base}/api/chat/streams/{reader.stream_id}", headers=headers)
            except httpx.TransportError:
                pass  # nobody reading: the server stops it after its grace period

        on_cancel = stop_on_server if resume else None
        resumed = failures = 0
        try:
            outcome = await _exchange(client, request, reader, deadline, writer, cancel_after, on_cancel)
        except asyncio.CancelledError:
            # Ctrl-C: asyncio.run cancels this task; returning instead of raising ends the
            # run normally, with a status line and no traceback. The cancel is taken back
            # first, so that the stop below is not cancelled in its turn.
            _uncancel()
            if on_cancel is not None and reader.stream_id:
                await on_cancel()
            interrupted = reader.outcome("interrupted")
            return dataclasses.replace(interrupted, resumed=0) if resume else interrupted
        while resume and outcome.code in ("truncated", "timeout", "connection_failed") and reader.stream_id and failures < RESUME_ATTEMPTS:
            # The connection dropped: come back after the last event that arrived whole.
            await asyncio.sleep(RESUME_BACKOFF_S[failures])
            resumed, failures = resumed + 1, failures + 1
            events_before = reader.chunks, reader.last_event_id
            deadline.restart()
            headers_again = {**headers, "last-event-id": reader.last_event_id}
            request = client.build_request("GET", f"{base}/api/chat/streams/{reader.stream_id}", headers=headers_again)
            try:
                outcome = await _exchange(client, request, reader, deadline, writer, cancel_after, on_cancel)
            except asyncio.CancelledError:
                _uncancel()
                await on_cancel()  # resume is on, and the stream has a name
                return dataclasses.replace(reader.outcome("interrupted"), resumed=resumed)
            if (reader.chunks, reader.last_event_id) != events_before:
                failures = 0  # progress: the attempts count again from here
    if resume:
        outcome = dataclasses.replace(outcome, resumed=resumed)
    return outcome


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


async def _exchange(
    client: httpx.AsyncClient, request: httpx.Request, reader: AnswerReader,
    deadline: Deadline, out: Writer, cancel_after: int | None,
    on_cancel: Callable[[], Awaitable[None]] | None = None,
) -> Outcome:
    try:
        response = await deadline.wait(client.send(request, stream=True))
    except TimedOut:
        return reader.outcome("error", code="timeout")
    except httpx.TransportError as error:
        return reader.outcome("error", code="connection_failed", message=type(error).__name__)
    try:
        reader.request_id = reader.request_id or response.headers.get("x-request-id")
        if response.status_code != 200:
            return await http_error(response, deadline)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return reader.outcome("error", code="unexpected_response", message="The answer is not an event stream.")
        outcome = await read_answer(response.aiter_raw(), reader, deadline, out, cancel_after)
        if outcome.kind in ("cancelled", "output_closed") and on_cancel is not None and reader.stream_id:
            await on_cancel()
        return outcome
    finally:
        await response.aclose()


async def read_answer(
    chunks: AsyncIterator[bytes], reader: AnswerReader, deadline: Deadline,
    out: Writer, cancel_after: int | None,
) -> Outcome:
    """Reads one response body's events: text and tool calls to `out`, until a terminal
    event (its outcome), --cancel-after, or the end of the body (truncated). Never raises
    for what the body holds."""
    parser = event_parser()
    try:
        while True:
            try:
                chunk = await deadline.wait(anext(chunks))
            except StopAsyncIteration:
                break  # an event the body did not finish is dropped, as the spec says
            try:
                events = parser.feed(chunk)  # keep-alive comments are no events
            except sse.SSEError as error:
                raise MalformedStream(str(error)) from None
            for event in events:
                deadline.restart()
                reading = reader.take(event)
                if reading.reasoning:
                    out.reasoning(reading.reasoning)
                if reading.text:
                    out.text(reading.text)
                if reading.tool_call is not None:
                    out.tool_call(reading.tool_call)
                if reading.outcome is not None:
                    return reading.outcome  # rule 2: nothing after a terminal event is read
                if cancel_after is not None and reader.chunks >= cancel_after:
                    return reader.outcome("cancelled")  # closing the response cancels upstream
    except TimedOut:
        return reader.outcome("error", code="timeout")
    except MalformedStream as error:
        return reader.outcome("error", code="malformed_stream", message=str(error))
    except RecursionError:  # a value nested too deep to handle (a usage, a call's input)
        return reader.outcome("error", code="malformed_stream", message="a value is nested too deep")
    except BrokenPipeError:
        return reader.outcome("output_closed")  # `| head` has what it wanted: leave
    except httpx.TransportError:
        pass  # the connection broke mid-body: the same as an end with no terminal event
    return reader.outcome("error", code="truncated")


# --- the command line ---------------------------------------------------------------------


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


# --- images (issue 30) --------------------------------------------------------------------

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


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Ask the chat Worker a question; the answer streams to stdout, one status line to stderr. "
                    "Without a question, hold a conversation: a prompt for each turn.",
        epilog="exit status: 0 complete; 5 cut short (length, content_filter), ended for a reason not known "
               "(other) or empty; 3 cancelled or stdout closed; 4 stream error; 130 interrupted; 2 usage. "
               "A conversation exits with its last answer's status (0 when none).",
    )
    parser.add_argument("question", nargs="?", help="the question (none: a conversation, /new starts over, /exit or Ctrl-D leaves)")
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the Worker (default {DEFAULT_URL})")
    parser.add_argument("--model", help="the model to answer, one of the Worker's (default: the Worker's)")
    parser.add_argument("--history", type=Path, metavar="FILE.json", help="earlier turns, sent before the question")
    parser.add_argument("--tools", type=Path, metavar="FILE.json",
                        help="OpenAI function tools to offer the model; its calls are printed as JSON lines, not run")
    parser.add_argument("--image", type=Path, action="append", default=[], metavar="FILE",
                        help="attach an image (PNG, JPEG, WebP or GIF) to the question; repeatable")
    parser.add_argument("--cancel-after", type=positive_int, metavar="N", help="leave after N chunks of text")
    parser.add_argument("--timeout", type=positive_float, metavar="S", help="give up when no event comes for S seconds")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--raw", action="store_true", help="read /api/chat/raw (Workers AI's own frames)")
    modes.add_argument("--resume", action="store_true", help="a resumable answer: reconnect where it left off on a drop")
    parser.add_argument("--token", default=os.environ.get("CHAT_TOKEN"), help="bearer token (default: $CHAT_TOKEN)")
    parser.add_argument("--reasoning-effort", choices=REASONING_EFFORTS, default=DEFAULT_REASONING_EFFORT,
                        help=f"how much a thinking model thinks first (default {DEFAULT_REASONING_EFFORT}: short, so the answer fits)")
    parser.add_argument("--plain", action="store_true", help="on a terminal, print the text as it comes instead of rendering markdown")
    parser.add_argument("--no-reasoning", action="store_true", help="on a terminal, hide a thinking model's reasoning")
    return parser.parse_args(argv)


def usage_error(message: str) -> int:
    print(f"chat_cli: {message}", file=sys.stderr)
    return EXIT_USAGE


PROMPT = "> "
GREETING = "a conversation: /new starts over, /exit or Ctrl-D leaves, Ctrl-C stops an answer"
NEW_CONVERSATION = "a new conversation"


class Conversation:
    """The turns so far (from --history, and each answer that ended whole), and how to ask
    for the next one."""

    def __init__(self, args: argparse.Namespace, history: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> None:
        self.args = args
        self.history = history
        self.tools = tools
        self._rendering = not args.plain  # off for good once rich turns out to be missing
        self._reader: AnswerReader = ProtocolReader()  # the turn in progress, for a Ctrl-C
        self._writing: Writer | None = None

    def ask(self, question: dict[str, Any]) -> Outcome | None:
        """One turn: the answer to stdout, the status line to stderr. None when the
        history holds an image the Worker would refuse (a usage error, already said)."""
        args = self.args
        try:
            messages = sendable([*self.history, question])
        except HistoryError as problem:
            usage_error(f"--history {args.history}: {problem}")
            return None
        self._reader = reader = RawReader() if args.raw else ProtocolReader()
        self._writing = None
        try:
            self._writing = writer = self._writer()  # may import rich: a Ctrl-C can come as early as this
            outcome = asyncio.run(ask(
                args.url, messages, out=writer, raw=args.raw,
                token=args.token, cancel_after=args.cancel_after, timeout=args.timeout, resume=args.resume,
                reasoning_effort=args.reasoning_effort, tools=self.tools, model=args.model, reader=reader,
            ))
            if outcome.kind == "output_closed":
                # Nothing more can reach stdout: point it at /dev/null, so that the flush at
                # exit does not print an error about the closed pipe (Python's documented way).
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            else:
                writer.finish()
        except KeyboardInterrupt:
            # Ctrl-C where the event loop does not turn it into a cancel: a second one while
            # the first is handled, or one while the last block is rendered. The answer was
            # not all shown: interrupted, and not kept.
            outcome = self.interrupted()
        except BaseException:
            if self._writing is not None:
                self._writing.abandon()  # the cursor shown again, whatever failed
            raise
        with ctrl_c_ignored():  # one status line, whole, however often Ctrl-C is pressed now
            self._keep_and_report(question, outcome)
        return outcome

    def interrupted(self) -> Outcome:
        """The turn in progress, ended by a Ctrl-C: its live region ended (the cursor shown
        again), with Ctrl-C ignored meanwhile, and how far it got."""
        with ctrl_c_ignored():
            if self._writing is not None:
                self._writing.abandon()
            return self._reader.outcome("interrupted")

    def _keep_and_report(self, question: dict[str, Any], outcome: Outcome) -> None:
        args = self.args
        if outcome.answer is not None:
            if args.history is not None:
                try:
                    append_turn(args.history, self.history, question, outcome.answer)
                except OSError as problem:
                    print(f"chat_cli: --history {args.history}: not written: {problem}", file=sys.stderr)
            self.history = [*self.history, question, outcome.answer]
        for line in outcome.report(terminal=sys.stderr.isatty()):
            print(line, file=sys.stderr, flush=True)

    def hold(self) -> int:
        """Questions from stdin, one a line, each answered in turn, until Ctrl-D (the end
        of stdin) or /exit. On a terminal, a prompt; Ctrl-C there starts a new line, and
        during an answer it stops the answer (ask's own handling), not the conversation.
        Returns the last answer's exit status (0 when none)."""
        prompting = sys.stdin.isatty()
        if prompting:
            import readline  # noqa: F401  (line editing and recall for input())
            self._say(GREETING)
        status = EXIT_COMPLETE
        while True:
            try:
                line = self._read_line(prompting)
            except EOFError:
                if prompting:
                    print(file=sys.stderr)  # the shell's prompt on a line of its own
                return status
            except KeyboardInterrupt:
                print(file=sys.stderr)
                continue
            if not line.strip():
                continue
            if line.strip() == "/exit":
                return status
            if line.strip() == "/new":
                self.history = []
                where = f"; {self.args.history} keeps the last one until this one's first whole answer" if self.args.history else ""
                self._say(NEW_CONVERSATION + where)
                continue
            outcome = self.ask(user_message(line, []))
            if outcome is None:
                return EXIT_USAGE
            status = outcome.exit_code
            if outcome.kind == "output_closed":
                return status

    def _read_line(self, prompting: bool) -> str:
        if prompting and sys.stdout.isatty():
            return input(PROMPT)  # readline knows the prompt, so editing redraws it
        if prompting:
            # stdout is a file or a pipe: it gets answers only; the prompt goes to the terminal.
            sys.stderr.write(PROMPT)
            sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def _say(self, line: str) -> None:
        print(OWN_LINE.format(visible(line)) if sys.stderr.isatty() else line, file=sys.stderr, flush=True)

    def _writer(self) -> Writer:
        terminal = sys.stdout.isatty()
        reasoning = not self.args.no_reasoning
        if terminal and self._rendering:
            try:
                return MarkdownWriter(sys.stdout, reasoning=reasoning)
            except ImportError:
                self._rendering = False
                self._say("rich is not installed: answers are shown as plain text (`pip install rich`, or --plain)")
        return AnswerWriter(sys.stdout, terminal=terminal, reasoning=reasoning)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.question is not None and not args.question.strip():
        return usage_error("the question is empty")
    if args.question is None and args.image:
        return usage_error("--image needs a question: a conversation's turns are text")
    if args.tools is not None and args.raw:
        # Raw frames are Workers AI's own: their tool calls are not read, so none would show.
        return usage_error("--tools: not allowed with --raw")
    # RecursionError: json's own bound on nesting, for a file nested too deep to read.
    try:
        history = read_history(args.history) if args.history is not None else []
    except (OSError, ValueError, RecursionError) as problem:
        return usage_error(f"--history {args.history}: {problem}")
    try:
        tools = read_tools(args.tools) if args.tools is not None else None
    except (OSError, ValueError, RecursionError) as problem:
        return usage_error(f"--tools {args.tools}: {problem}")
    try:
        question = None if args.question is None else user_message(args.question, read_images(args.image) if args.image else [])
    except ImageFileError as problem:
        return usage_error(str(problem))
    # Model text may hold a lone surrogate (docs/protocol.md): print it as U+FFFD, not a crash.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="replace")
    conversation = Conversation(args, history, tools)
    try:
        if question is None:
            return conversation.hold()
        outcome = conversation.ask(question)
    except KeyboardInterrupt:
        # A Ctrl-C between the ones a turn takes (pressed again and again): the turn ends
        # interrupted all the same, with one status line.
        outcome = conversation.interrupted()
        with ctrl_c_ignored():
            for line in outcome.report(terminal=sys.stderr.isatty()):
                print(line, file=sys.stderr, flush=True)
    return EXIT_USAGE if outcome is None else outcome.exit_code


@contextmanager
def ctrl_c_ignored() -> Iterator[None]:
    """Ctrl-C ignored meanwhile (cleaning up after one, printing the status line)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        # Ctrl-C before the first request (reading the files, at the prompt's edge): the
        # same quiet ending, one status line, exit 130.
        print(Outcome(kind="interrupted", chunks=0, chars=0).report(terminal=sys.stderr.isatty())[-1], file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
