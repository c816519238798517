"""clients/chat_cli as a person uses it, in a pseudo-terminal of its own (pexpect: the
CLI's controlling terminal, so Ctrl-C and Ctrl-D are the terminal's own): answers rendered
as markdown while they stream, reasoning apart, a conversation with /new, Ctrl-C and
Ctrl-D. What a window would show is read through a terminal emulator (pyte), after rich's
redraws. The real runtime, with scripted models (tests/frontends/cli_scenarios.py)."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import sys
import unicodedata

import pexpect
import pyte
import pytest
from rich.console import Console
from rich.markdown import Markdown

from tests.frontends import terminal_svg
from tests.frontends.cli_scenarios import (
    CLI_SCENARIOS,
    FIRST_TURN,
    HOSTILE,
    HOSTILE_MARKDOWN,
    HOSTILE_MARKDOWN_ANSWER,
    MARKDOWN,
    MARKDOWN_ANSWER,
    SECOND_TURN,
    THINKING,
    THINKING_ANSWER,
    THINKING_REASONING,
    WAITING,
    WAITING_FIRST,
)
from tests.frontends.conftest import CLI, DEFAULT_MODEL, ROOT, ending, run_cli

COLUMNS, ROWS = 100, 30
PROMPT = "> "
# rich's own sequences, the only ones that may reach the terminal: SGR (styles), erase the
# line, cursor up (the live region's redraw), and hide or show the cursor.
RICH_SEQUENCES = re.compile(r"\x1b\[[0-9;]*m|\x1b\[2K|\x1b\[\d*A|\x1b\[\?25[lh]")
ANY_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|.)", re.DOTALL)


def terminal_environment(**extra: str) -> dict[str, str]:
    """The environment of a program in a terminal window. COLUMNS and LINES left out: rich
    takes them over the terminal's own size (pytest's own terminal may set them)."""
    return {**{k: v for k, v in os.environ.items() if k not in ("CHAT_TOKEN", "COLUMNS", "LINES")},
            "PYTHONIOENCODING": "utf-8", "TERM": "xterm-256color", **extra}


def spawn(*args: str, env: dict[str, str] | None = None) -> pexpect.spawn:
    env = terminal_environment(**(env or {}))
    # pytest-xdist's workers ignore SIGINT, and an ignored signal stays ignored in a child:
    # the CLI starts as from a shell, with Ctrl-C's default.
    child = pexpect.spawn(sys.executable, [str(CLI), *args], cwd=str(ROOT), env=env, dimensions=(ROWS, COLUMNS),
                          encoding="utf-8", codec_errors="strict", timeout=30,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    child.logfile_read = io.StringIO()  # everything the terminal got, whatever was matched
    return child


def finished(child: pexpect.spawn) -> str:
    """Everything the CLI wrote to its terminal, once it has exited."""
    child.expect(pexpect.EOF)
    child.close()
    return child.logfile_read.getvalue()


def window(output: str) -> pyte.Screen:
    """What a terminal window shows after `output`. Taller than the terminal the CLI was
    given, so nothing scrolls away: rich moves the cursor only within its live region."""
    screen = pyte.Screen(COLUMNS, 1000)
    pyte.Stream(screen).feed(output)
    return screen


def shown_lines(screen: pyte.Screen) -> list[str]:
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def rendered_whole(markdown: str) -> list[str]:
    """rich's rendering of the whole answer at once, at the terminal's width: what the
    streamed rendering must end up showing (blank lines aside, which set blocks apart)."""
    console = Console(width=COLUMNS, color_system=None)
    with console.capture() as capture:
        console.print(Markdown(markdown, hyperlinks=False))
    return [line.rstrip() for line in capture.get().split("\n") if line.strip()]


def test_an_answer_is_rendered_as_markdown_while_it_streams_and_ends_as_one_rendering_of_the_whole(start_runtime):
    runtime = start_runtime(CLI_SCENARIOS)
    child = spawn("--url", runtime.url, MARKDOWN)
    output = finished(child)
    assert child.exitstatus == 0, output
    lines = shown_lines(window(output))
    assert [line for line in lines[:-1] if line] == rendered_whole(MARKDOWN_ANSWER)
    assert ending(lines[-1]) == f"complete chunks={-(-len(MARKDOWN_ANSWER) // 9)} chars={len(MARKDOWN_ANSWER)}"
    shown = "\n".join(lines)
    for source in ("## ", "**", "```", "|---|", "](https://"):
        assert source not in shown, f"{source!r} is markdown's, not the reader's"
    assert "the spec\n(https://html.spec.whatwg.org/multipage/server-sent-events.html)" in shown, "a link shows its address"
    assert "\x1b]8;" not in output, "never a terminal hyperlink, whose text could hide its address"
    # Blocks finished while it streamed were printed once, not redrawn: the first heading
    # was drawn a few times while it was the open block, then printed for good, while the
    # live region went on redrawing the blocks after it (a redraw of the whole answer
    # would draw the heading each time).
    redraws = output.count("\x1b[1A")
    assert output.count("Streaming, briefly") <= 3 and redraws > 20, (output.count("Streaming, briefly"), redraws)


def test_rendered_the_models_escapes_still_cannot_drive_the_terminal(start_runtime):
    runtime = start_runtime(CLI_SCENARIOS)
    child = spawn("--url", runtime.url, HOSTILE)
    output = finished(child)
    assert child.exitstatus == 0, output
    sequences = ANY_SEQUENCE.findall(output)
    assert sequences and all(RICH_SEQUENCES.fullmatch(sequence) for sequence in sequences), set(sequences) - set(RICH_SEQUENCES.findall(output))
    assert terminal_acts_on(output) == [], "nothing of the model's reaches the terminal to act on"
    screen = window(output)
    lines = shown_lines(screen)
    assert any("Title: \\x1b]0;pwned title\\x07" in line for line in lines), "shown, escaped"
    # Only the CLI's own status line is in reverse video, after the fake one in the text.
    reversed_rows = {row for row, line in screen.buffer.items() if any(char.reverse for char in line.values())}
    assert reversed_rows == {len(lines) - 1}
    assert lines[-1].startswith("complete chunks=") and "\\x0dcomplete chunks=1 chars=1" in " ".join(lines[:-1]), lines


def terminal_acts_on(output: str) -> list[str]:
    """What reached the terminal to act on, rich's own sequences and "\r" left out."""
    text = ANY_SEQUENCE.sub("", output).replace("\r", "")
    return [char for char in text if (unicodedata.category(char) == "Cc" and char not in "\n\t")
            or unicodedata.bidirectional(char) in {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}]


def test_markdown_can_neither_hide_text_nor_smuggle_what_a_terminal_acts_on(start_runtime):
    runtime = start_runtime(CLI_SCENARIOS)
    child = spawn("--url", runtime.url, HOSTILE_MARKDOWN)
    output = finished(child)
    assert child.exitstatus == 0, output
    assert all(RICH_SEQUENCES.fullmatch(sequence) for sequence in ANY_SEQUENCE.findall(output))
    assert terminal_acts_on(output) == [], "a character reference is decoded after escaping: escaped again"
    shown = "\n".join(shown_lines(window(output)))
    # A block whose rendering would lose a word of its source (an entity decoded, nesting
    # past the parser's limit) is shown as its source: every word is on the screen.
    for word in re.findall(r"[^\W_]+", HOSTILE_MARKDOWN_ANSWER):
        assert word in shown, word
    for hidden in ("HIDDEN-IN-LISTS", "HIDDEN-IN-QUOTES", "<div>HIDDEN-IN-HTML</div>", "HIDDEN-ALT", "https://images.example/pixel.png"):
        assert hidden in shown, f"{hidden} is on the screen: nested too deep, it is plain text; HTML is text; an image is a link"


@pytest.mark.parametrize(("answer", "hidden"), [
    pytest.param("| Service | Where to sign in |\n|---|---|\n| Bank | https://www.mybank.com.secure-login-verify-account-now.attacker.example/ |\n",
                 "attacker.example", id="a-table-cell-that-does-not-fit"),
    pytest.param("| a | b |\n|---|---|\n| 1 | 2 | EXTRACELL |\n", "EXTRACELL", id="a-cell-past-the-header"),
    pytest.param("> " * 17 + "NARROWED to nothing\n", "NARROWED", id="nested-narrower-than-a-character"),
    pytest.param("[docs](https://ok.example \"TITLE run this\")\n", "TITLE", id="a-link-title"),
    pytest.param("Para one.\n\n[x]: https://evil.example \"REFTITLE\"\n\nPara two.\n", "REFTITLE", id="a-reference-definition"),
    pytest.param("```python   FENCENOTE pipe it into sh\nprint('hi')\n```\n", "FENCENOTE", id="words-after-a-code-blocks-language"),
    pytest.param("[x]: https://evil.example \"DEFNOTE\"\n\nPara one.\n\nPara two.\n", "DEFNOTE", id="a-definition-before-the-first-block"),
    pytest.param("| a | b |\n|---|---|\n| rm | safe | NOT |\n\n<https://NOT.example/>\n", "| NOT |", id="a-loss-made-up-elsewhere"),
])
def test_a_rendering_that_would_lose_text_shows_the_source_instead(answer, hidden):
    shown = rendered_alone(answer)
    assert hidden in shown.replace("\n", ""), shown


def rendered_alone(answer: str) -> str:
    """What a 60-column window shows of MarkdownWriter given `answer` in one piece, on a
    terminal of its own (no request: what rich does with it)."""
    script = ("import sys; from clients import chat_cli; "
              "writer = chat_cli.MarkdownWriter(sys.stdout); writer.text(sys.argv[1]); writer.finish()")
    child = pexpect.spawn(sys.executable, ["-c", script, answer], cwd=str(ROOT), env=terminal_environment(), dimensions=(ROWS, 60),
                          encoding="utf-8", timeout=30)
    child.logfile_read = io.StringIO()
    shown = "\n".join(shown_lines(window(finished(child))))
    assert child.exitstatus == 0, shown
    return shown


@pytest.mark.parametrize("answer", [
    pytest.param("这是一个很长的中文段落，用来测试终端里的换行是否会被当成丢失的文字，" * 3 + "其中有**加粗**和`代码`。\n", id="chinese-wrapped-with-markup"),
    pytest.param("1. one\n1. two\n1. three\n", id="a-list-numbered-one-one-one"),
    pytest.param("Visit <https://example.com/a?b=c&d=e> or [docs](https://example.com/x_y).\n", id="links"),
])
def test_ordinary_markdown_is_rendered_not_shown_as_source(answer):
    shown = rendered_alone(answer)
    assert "**" not in shown and "`" not in shown and "](" not in shown and "1. " not in shown, shown


@pytest.mark.parametrize("hidden", [False, True], ids=["shown", "hidden"])
def test_reasoning_is_shown_dimmed_and_apart_before_the_answer_or_hidden(start_runtime, hidden):
    runtime = start_runtime(CLI_SCENARIOS)
    child = spawn("--url", runtime.url, *(["--no-reasoning"] if hidden else []), THINKING)
    output = finished(child)
    assert child.exitstatus == 0, output
    lines = shown_lines(window(output))
    if hidden:
        assert lines[:-1] == [THINKING_ANSWER] and THINKING_REASONING not in output
    else:
        assert lines[:-1] == [THINKING_REASONING, "", THINKING_ANSWER]
        assert re.search(r"\x1b\[2m" + re.escape(THINKING_REASONING), output), "dim (SGR 2)"
    assert lines[-1] == f"complete chunks=1 chars={len(THINKING_ANSWER)} model={DEFAULT_MODEL} tokens=9+8 finish=stop"
    piped = run_cli("--url", runtime.url, THINKING)
    assert (piped.exit_code, piped.stdout) == (0, THINKING_ANSWER + "\n"), "piped: the answer only, as before"


def transcript_of(answer: str) -> list[str]:
    """The messages the model was sent, the Worker's system prompt left out."""
    return [line for line in answer.split("\n") if not line.startswith("system: ")]


def test_a_conversation_keeps_its_turns_starts_over_with_new_and_leaves_with_ctrl_d(start_runtime, tmp_path):
    runtime = start_runtime(CLI_SCENARIOS)
    path = tmp_path / "chat.json"
    child = spawn("--url", runtime.url, "--history", str(path))
    child.expect_exact("a conversation: /new starts over")
    for question in (FIRST_TURN, SECOND_TURN):
        child.expect_exact(PROMPT)
        child.sendline(question)
        child.expect(r"complete chunks=\d+")
    kept = json.loads(path.read_text())
    assert [message["role"] for message in kept] == ["user", "assistant"] * 2
    first_answer = kept[1]["content"]
    assert transcript_of(kept[3]["content"]) == transcript_of(f"user: {FIRST_TURN}\nassistant: {first_answer}\nuser: {SECOND_TURN}"), \
        "the second turn was sent with the first"
    child.expect_exact(PROMPT)
    child.sendline("/new")
    child.expect_exact("a new conversation")
    child.expect_exact(PROMPT)
    child.sendline(SECOND_TURN)
    child.expect(r"complete chunks=\d+")
    kept = json.loads(path.read_text())
    assert transcript_of(kept[1]["content"]) == [f"user: {SECOND_TURN}"] and len(kept) == 2, "after /new, nothing earlier is sent"
    child.expect_exact(PROMPT)
    child.sendeof()  # Ctrl-D at the prompt leaves
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def ctrl_c_at_the_prompt(child: pexpect.spawn) -> None:
    """Ctrl-C at the prompt gives a new prompt, as a shell does. Pressed up to three times:
    CPython's readline misses a SIGINT that lands after the prompt is written and before it
    waits for a key; a person presses again. (Modules/readline.c,
    readline_until_enter_or_signal: select() has no timeout unless an input hook is set,
    and signals are checked only on its EINTR; read 2026-12-03.)"""
    for _ in range(3):
        child.sendintr()
        try:
            child.expect_exact(PROMPT, timeout=3)
            return
        except pexpect.TIMEOUT:
            assert child.isalive(), "Ctrl-C at the prompt does not leave"
    raise AssertionError("no new prompt after three Ctrl-C")


def test_ctrl_c_stops_the_answer_and_the_model_but_not_the_conversation(start_runtime):
    runtime = start_runtime(CLI_SCENARIOS)
    child = spawn("--url", runtime.url)
    child.expect_exact(PROMPT)
    ctrl_c_at_the_prompt(child)
    mark = len(runtime.lines)
    child.sendline(WAITING)
    child.expect_exact(WAITING_FIRST)  # the model then waits for ever
    child.sendintr()
    child.expect_exact("interrupted after 1 chunks")
    runtime.wait_for_record("chat_stream_cancelled", since=mark)  # the Worker saw the client leave
    child.expect_exact(PROMPT)
    child.sendline("Hi")
    child.expect(r"complete chunks=1 chars=6")
    child.expect_exact(PROMPT)
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, "the last answer was whole"


def test_a_conversation_pictured_for_the_docs(start_runtime):
    # `make screenshot` copies the picture to docs/cli-terminal.svg: a pty capture, as a
    # window shows it (pyte), drawn as SVG (terminal_svg.py).
    runtime = start_runtime(CLI_SCENARIOS)
    child = spawn("--url", runtime.url)
    child.expect_exact(PROMPT)
    child.sendline(THINKING)
    child.expect(r"complete chunks=\d+")
    child.expect_exact(PROMPT)
    child.sendline(MARKDOWN)
    child.expect(r"complete chunks=\d+")
    child.expect_exact(PROMPT)
    child.sendeof()
    screen = window(finished(child))
    lines = shown_lines(screen)
    assert lines[0].startswith("a conversation: ") and f"{PROMPT}{MARKDOWN}" in lines and THINKING_REASONING in lines
    picture = terminal_svg.svg(screen, len(lines), "python clients/chat_cli")
    assert "Streaming, briefly" in picture and picture.count("<text ") > len(lines)
    (ROOT / ".dev").mkdir(exist_ok=True)
    (ROOT / ".dev" / "cli-terminal.svg").write_text(picture)


def test_without_rich_a_terminal_gets_plain_text_and_one_line_that_says_why(start_runtime, tmp_path):
    # A `rich` that cannot be imported, ahead of the installed one on the path.
    (tmp_path / "rich").mkdir()
    (tmp_path / "rich" / "__init__.py").write_text("raise ImportError('not installed')\n")
    runtime = start_runtime(CLI_SCENARIOS)
    child = spawn("--url", runtime.url, THINKING, env={"PYTHONPATH": str(tmp_path)})
    lines = shown_lines(window(finished(child)))
    assert child.exitstatus == 0
    assert lines == ["rich is not installed: answers are shown as plain text (`pip install rich`, or --plain)",
                     THINKING_REASONING, "", THINKING_ANSWER, lines[-1]] and lines[-1].startswith("complete chunks=1")
