"""clients/chat_cli on a terminal: a real pseudo-terminal, the CLI as a process, the real
runtime with a scripted model. The model's escape sequences arrive visibly escaped and
cannot forge the status line; in a pipe the answer stays the model's text byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tty
import unicodedata
from dataclasses import dataclass

import pytest

from tests.frontends.cli_scenarios import (
    CLI_SCENARIOS,
    CLIPBOARD,
    HOSTILE,
    HOSTILE_CALL,
    HOSTILE_CALL_ARGUMENTS,
    HOSTILE_CALL_TEXT,
    HOSTILE_PIECES,
    HOSTILE_TEXT,
)
from tests.frontends.conftest import CLI, DEFAULT_MODEL, ROOT
from tests.frontends.upstreams import CURRENT_TIME

# The CLI's own lines on a terminal: reverse video, then every attribute off.
OWN = "\x1b[7m{}\x1b[0m\n"
# Native frames carry no usage and no finish_reason: the model is the only detail.
HOSTILE_STATUS = f"complete chunks={len(HOSTILE_PIECES)} chars={len(HOSTILE_TEXT)} model={DEFAULT_MODEL}"
# Unicode's bidi classes of the embeddings, overrides and isolates (UAX #9).
BIDI_CONTROLS = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}


def shown(text: str) -> str:
    """What a terminal must get of the model's `text`, by Unicode's own properties rather
    than the CLI's table: each control character (category Cc: C0, DEL, C1) but newline
    and tab, and each bidi control, written as Python writes it in a string."""
    return "".join(
        (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
        if (unicodedata.category(char) == "Cc" and char not in "\n\t") or unicodedata.bidirectional(char) in BIDI_CONTROLS
        else char
        for char in text
    )


def acted_on(text: str) -> list[str]:
    """The characters of `text` a terminal would act on rather than show."""
    return [char for char in text if shown(char) != char]


@dataclass(frozen=True)
class TerminalRun:
    exit_code: int
    terminal: str  # what the pseudo-terminal got: what a terminal window would be sent
    stdout: bytes  # when piped (else b"")
    stderr: bytes  # when piped (else b"")


def run_on_terminal(*args: str, stdout_on_terminal: bool = True, stderr_on_terminal: bool = True) -> TerminalRun:
    """Runs the CLI with stdout and stderr on one pseudo-terminal, as in a terminal window,
    or either of them piped."""
    controller, terminal = os.openpty()
    tty.setraw(terminal)  # no line discipline: the bytes as the CLI wrote them ("\n" stays "\n")
    received: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                return  # EIO: the terminal's last writer is gone and all it wrote was read
            if not chunk:
                return
            received.append(chunk)

    try:
        process = subprocess.Popen(
            [sys.executable, str(CLI), *args], cwd=ROOT, stdin=subprocess.DEVNULL,
            stdout=terminal if stdout_on_terminal else subprocess.PIPE,
            stderr=terminal if stderr_on_terminal else subprocess.PIPE,
            env={**{k: v for k, v in os.environ.items() if k != "CHAT_TOKEN"}, "PYTHONIOENCODING": "utf-8"},
        )
    finally:
        os.close(terminal)  # the CLI holds its own copy: its exit closes the terminal
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        stdout, stderr = process.communicate(timeout=30)
        reader.join(timeout=10)
    finally:
        process.kill()
        os.close(controller)
    assert not reader.is_alive(), "the terminal never closed"
    return TerminalRun(process.returncode, b"".join(received).decode(), stdout or b"", stderr or b"")


def test_the_scenario_holds_every_kind_of_escape():
    # The text the tests below send, checked to hold what they claim to test.
    for sequence in ("\x1b]0;", "\x1b]52;c;", "\x1b[2K\r", "\x9b", "\x9d", "\u202e", "\u2066", "\x07", "\x08", "\x7f", "\x00"):
        assert sequence in HOSTILE_TEXT
    assert "\x1b" in HOSTILE_PIECES[4][-1:] and HOSTILE_PIECES[5] == "[2J", "a sequence split across deltas"
    assert not HOSTILE_TEXT.endswith("\n")


@pytest.mark.parametrize(("stdout_on_terminal", "stderr_on_terminal"), [
    pytest.param(True, True, id="both-on-the-terminal"),
    pytest.param(False, True, id="stdout-piped"),
    pytest.param(True, False, id="stderr-piped"),
    pytest.param(False, False, id="both-piped"),
])
def test_the_models_escapes_are_shown_escaped_on_a_terminal_and_byte_exact_in_a_pipe(start_runtime, stdout_on_terminal, stderr_on_terminal):
    runtime = start_runtime(CLI_SCENARIOS)
    run = run_on_terminal("--plain", "--url", runtime.url, HOSTILE, stdout_on_terminal=stdout_on_terminal, stderr_on_terminal=stderr_on_terminal)
    assert run.exit_code == 0, run
    # The text does not end a line: the CLI ends it, so that the status line starts its own.
    answer_on_terminal = shown(HOSTILE_TEXT) + "\n" if stdout_on_terminal else ""
    status_on_terminal = OWN.format(HOSTILE_STATUS) if stderr_on_terminal else ""
    assert run.terminal == answer_on_terminal + status_on_terminal
    assert run.stdout == (b"" if stdout_on_terminal else HOSTILE_TEXT.encode() + b"\n"), "piped: the model's bytes"
    assert run.stderr == (b"" if stderr_on_terminal else f"{HOSTILE_STATUS}\n".encode()), "piped: no styling"


def test_each_escape_arrives_visibly_escaped_and_no_model_text_looks_like_the_status_line(start_runtime):
    runtime = start_runtime(CLI_SCENARIOS)
    run = run_on_terminal("--plain", "--url", runtime.url, HOSTILE)
    answer, status = run.terminal.split("\x1b[7m")
    for escaped in (
        "Title: \\x1b]0;pwned title\\x07 and",  # OSC 0 (window title)
        "clipboard: \\x1b]52;c;" + CLIPBOARD + "\\x07.\n",  # OSC 52 (clipboard write)
        "Erased:\\x1b[2K\\x0dcomplete chunks=1 chars=1\n",  # erase the line, then a fake status
        "Split \\x1b[2J and \\x1b]0;split title\\x1b\\.\n",  # sequences split across deltas
        "C1 CSI: \\x9b31mred\\x9b0m, C1 OSC: \\x9d0;c1 title\\x9c.\n",
        "Bidi: \\u202eevil\\u202c \\u2066isolated\\u2069 \\u202aembedded\\u202c.\n",
        "C0: bell\\x07 back\\x08space del\\x7f nul\\x00 form\\x0cfeed vt\\x0b.\n",
        # Kept: tab and newline, letters of any script, and the bidi marks (their text needs them).
        "Kept: tab\there, caf\u00e9 \u6771\u4eac, \u05e9\u05dc\u05d5\u05dd\u200f!, mark\u200e \u061c end\n",
    ):
        assert escaped in answer
    assert acted_on(answer) == [], "nothing of the model's reaches the terminal to act on"
    # The CLI's own line is the only one in reverse video, the only escape sequences on the
    # terminal, and it starts a line of its own after the fake one.
    assert answer.endswith("\n") and status == f"{HOSTILE_STATUS}\x1b[0m\n"
    assert run.terminal.count("\x1b") == 2


def test_a_tool_call_line_on_a_terminal_is_json_with_its_escapes_kept_as_json_escapes(start_runtime, tmp_path):
    runtime = start_runtime(CLI_SCENARIOS)
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([CURRENT_TIME]))
    on_terminal = run_on_terminal("--plain", "--url", runtime.url, "--tools", str(tools), HOSTILE_CALL)
    piped = run_on_terminal("--url", runtime.url, "--tools", str(tools), HOSTILE_CALL, stdout_on_terminal=False, stderr_on_terminal=False)
    assert (on_terminal.exit_code, piped.exit_code) == (0, 0), (on_terminal, piped)
    call = {"id": "call_1", "name": "note", "arguments": HOSTILE_CALL_ARGUMENTS, "input": json.loads(HOSTILE_CALL_ARGUMENTS)}
    text, line, status = on_terminal.terminal.split("\n")[:3]
    assert text == shown(HOSTILE_CALL_TEXT) == "Calling\\x1b[2K."
    assert json.loads(line) == {"tool_call": call}, "the same call, read back"
    assert "\\u009b2J \\u202eevil\\u007f" in line and acted_on(line) == []
    assert status == OWN.format(f"complete chunks=1 chars={len(HOSTILE_CALL_TEXT)} tool_calls=1 model={DEFAULT_MODEL} finish=tool_calls").rstrip("\n")
    # Piped, the line is as it always was: the model's characters as they came.
    assert piped.stdout.decode() == HOSTILE_CALL_TEXT + "\n" + json.dumps({"tool_call": call}, ensure_ascii=False) + "\n"
