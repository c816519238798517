"""Writing an answer: to a pipe as it comes, or to a terminal, escaped and rendered as
markdown while it streams (MarkdownWriter)."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from typing import Any, Protocol

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


# A letter or digit, for checking that a rendering lost none (markdown's own marks, `_`
# among them, are neither).
LETTER = re.compile(r"[^\W_]")


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
