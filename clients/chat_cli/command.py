"""The command line: its arguments, a conversation at a prompt, and `main`."""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clients.chat_cli.defaults import DEFAULT_REASONING_EFFORT, DEFAULT_URL, EXIT_COMPLETE, EXIT_USAGE, REASONING_EFFORTS
from clients.chat_cli.inputs import (
    HistoryError,
    ImageFileError,
    append_turn,
    read_history,
    read_images,
    read_tools,
    sendable,
    user_message,
)
from clients.chat_cli.request import ask
from clients.chat_cli.stream import AnswerReader, Outcome, ProtocolReader, RawReader
from clients.chat_cli.terminal import OWN_LINE, AnswerWriter, MarkdownWriter, Writer, visible


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
