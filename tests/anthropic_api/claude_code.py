"""Run the real Claude Code (`claude -p`) against the local Worker's /v1/messages.

Checked against @anthropic-ai/claude-code 2.1.328 on 2026-12-04 (docs/anthropic.md,
"Claude Code"). Every run gets its own HOME in a temporary directory, so the real
~/.claude is never read or written, and runs with the non-essential traffic off (no
update check, no telemetry, no call to api.anthropic.com: with these set, its only
requests went to ANTHROPIC_BASE_URL, as a capture of every request it made showed).

`ensure_claude_code()` installs the pinned Claude Code once into .dev/claude-code (about
5 s and 357 MB on this machine: a native binary in the platform package
@anthropic-ai/claude-code-linux-x64, linked into place by the package's postinstall), under
a file lock so that parallel pytest workers install it once. Never in `make dev`.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness.npm_tools import ensure_installed

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_CODE_VERSION = "2.1.328"
PREFIX = ROOT / ".dev" / "claude-code"
CLAUDE_BIN = PREFIX / "node_modules" / ".bin" / "claude"


@dataclass
class ClaudeResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def result(self) -> dict[str, Any]:
        """The `--output-format json` object (type "result")."""
        return json.loads(self.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def ensure_claude_code(timeout: float = 600) -> Path:
    """Install @anthropic-ai/claude-code@CLAUDE_CODE_VERSION into .dev/claude-code once."""
    ensure_installed(PREFIX, "@anthropic-ai/claude-code", CLAUDE_CODE_VERSION, what="Claude Code", timeout=timeout)
    return CLAUDE_BIN


def run_claude(base_url: str, prompt: str, *, args: Sequence[str] = (), api_key: str = "any key works without AUTH_TOKEN",
               timeout: float = 120) -> ClaudeResult:
    """`claude -p PROMPT --output-format json` with ANTHROPIC_BASE_URL at `base_url`, in a
    fresh HOME and working directory, no model flags: Claude Code's own defaults."""
    binary = ensure_claude_code()
    with tempfile.TemporaryDirectory(prefix="claude-home-") as home:
        env = {
            "PATH": os.pathsep.join([str(ROOT / ".venv" / "bin"), "/usr/bin", "/bin"]),
            "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb",
            "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": api_key,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
            # A failure here is the test's verdict, not something to wait out: its default
            # is 10 retries with backoff up to 32 s, then a request without streaming.
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        started = time.monotonic()
        done = subprocess.run([str(binary), "-p", prompt, "--output-format", "json", *args], cwd=home, env=env,
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return ClaudeResult(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
