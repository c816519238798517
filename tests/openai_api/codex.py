"""Run the real Codex CLI (`codex exec`) against a local OpenAI-compatible Responses endpoint.

Checked against @openai/codex 0.171.0 on 2026-12-02 (docs/openai.md, "Codex CLI"). It never touches the real
~/.codex: every run gets its own CODEX_HOME (and HOME) in a temporary directory holding a
config.toml that points Codex at `<base_url>/v1/responses`, with every retry, the endless
reconnect on a refused connection, analytics, the plugin sync and OTel export turned off.

    result = run_codex("http://127.0.0.1:8787", "Say hello")
    assert result.returncode == 0 and result.last_message() == "..."

`ensure_codex()` installs the pinned Codex once into .dev/codex (about 6 s and 424 MB on this
machine, from a 164 MiB tarball), under a file lock so that parallel pytest workers install it
once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.harness.npm_tools import ensure_installed

ROOT = Path(__file__).resolve().parents[2]
CODEX_VERSION = "0.171.0"
CODEX_PREFIX = ROOT / ".dev" / "codex"
CODEX_BIN = CODEX_PREFIX / "node_modules" / ".bin" / "codex"
# About 424 MB installed: only the tests that run Codex install it, never `make dev`.
MODEL = "@cf/zai-org/glm-4.7-flash"
PROVIDER_ID = "worker"
API_KEY_ENV = "WORKER_API_KEY"

# Lines Codex prints whatever the endpoint does; tests can ignore them.
KNOWN_NOISE = (
    "Model metadata for `",  # no catalog entry for a @cf/ model: fallback metadata (harmless)
    "could not find bubblewrap on PATH",  # it uses its bundled bwrap
    "Refusing to create helper binaries under temporary dir",  # CODEX_HOME under /tmp (harmless)
)


@dataclass
class CodexResult:
    # 0: the turn completed; 1: any failure (HTTP error, response.failed/incomplete, a cut stream);
    # -9: killed at the timeout
    returncode: int
    stdout: str  # with json_events: JSONL events; without: the last agent message only
    stderr: str
    events: list[dict[str, Any]] = field(default_factory=list)  # parsed --json lines
    seconds: float = 0.0
    timed_out: bool = False

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    def items(self, item_type: str) -> list[dict[str, Any]]:
        """Completed items of one type: agent_message, reasoning, command_execution, error, ..."""
        return [e["item"] for e in self.of_type("item.completed") if e.get("item", {}).get("type") == item_type]

    @staticmethod
    def _text(value: Any) -> str | None:
        return value if isinstance(value, str) else None

    def last_message(self) -> str | None:
        messages = self.items("agent_message")
        if messages:
            return self._text(messages[-1].get("text"))
        if not self.events and self.returncode == 0:
            return self.stdout.rstrip("\n") or None
        return None

    def failure(self) -> str | None:
        """The turn.failed message, or None."""
        failed = self.of_type("turn.failed")
        return self._text(failed[-1].get("error", {}).get("message")) if failed else None

    def real_errors(self) -> list[str]:
        """`error` items and events other than the known fallback-metadata notice."""
        messages = [i.get("message", "") for i in self.items("error")] + [e.get("message", "") for e in self.of_type("error")]
        return [m for m in messages if not any(noise in m for noise in KNOWN_NOISE)]


def ensure_codex(timeout: float = 600) -> Path:
    """Install @openai/codex@CODEX_VERSION into .dev/codex once; return the `codex` launcher."""
    ensure_installed(CODEX_PREFIX, "@openai/codex", CODEX_VERSION, what="Codex CLI", timeout=timeout)
    return CODEX_BIN


def _base_env() -> dict[str, str]:
    path = os.pathsep.join([str(ROOT / ".venv" / "bin"), os.environ.get("PATH", "/usr/bin:/bin")])
    return {"PATH": path, "LANG": "C.UTF-8", "TERM": "dumb"}


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def config_toml(base_url: str, *, model: str = MODEL, with_key: bool = True, stream_idle_timeout_ms: int = 30_000,
                retries: int = 0, minimal_tools: bool = False, extra: str = "") -> str:
    """The config.toml that points Codex at `base_url` (no trailing /v1: it is added here)."""
    features = ["unbounded_connection_retries = false", "plugins = false"]
    if minimal_tools:  # only function tools: exec_command, write_stdin, request_user_input, view_image
        features += ["goals = false"]
    lines = [
        f"model = {_toml_str(model)}",
        f"model_provider = {_toml_str(PROVIDER_ID)}",
        'approval_policy = "never"',
        'sandbox_mode = "read-only"',
        "check_for_update_on_startup = false",
    ]
    if minimal_tools:
        lines.append('web_search = "disabled"')
    lines += [
        "",
        "[analytics]", "enabled = false", "",
        "[feedback]", "enabled = false", "",
        "[history]", 'persistence = "none"', "",
        *(["[agents]", "enabled = false", ""] if minimal_tools else []),
        "[otel]", 'exporter = "none"', 'metrics_exporter = "none"', 'trace_exporter = "none"', "",
        "[features]", *features, "",
        f"[model_providers.{PROVIDER_ID}]",
        'name = "Local Worker"',
        f"base_url = {_toml_str(base_url.rstrip('/') + '/v1')}",
        'wire_api = "responses"',
        f"request_max_retries = {retries}",
        f"stream_max_retries = {retries}",
        f"stream_idle_timeout_ms = {stream_idle_timeout_ms}",
    ]
    if with_key:
        lines.append(f"env_key = {_toml_str(API_KEY_ENV)}")
    return "\n".join(lines) + "\n" + (extra + "\n" if extra else "")


def run_codex(
    base_url: str,
    prompt: str,
    *,
    timeout: float = 60,
    api_key: str | None = "any key works without AUTH_TOKEN",
    model: str = MODEL,
    json_events: bool = True,
    minimal_tools: bool = False,
    retries: int = 0,
    stream_idle_timeout_ms: int = 30_000,
    extra_args: Sequence[str] = (),
    extra_config: str = "",
    extra_env: Mapping[str, str] | None = None,
    home_root: str | os.PathLike[str] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    codex_bin: str | os.PathLike[str] | None = None,
) -> CodexResult:
    """Run `codex exec` once against `base_url` and return what it did.

    The process runs in its own session; on timeout the whole group (Codex, its sandboxed shells)
    is killed by that group's id, which is this call's own child. `api_key=None` sends no
    Authorization header at all. `home_root`: where the temporary CODEX_HOME goes (default: the
    system temp dir; Codex then warns once that it will not create its PATH helper links there,
    which changes nothing for exec)."""
    binary = Path(codex_bin) if codex_bin else ensure_codex()
    with tempfile.TemporaryDirectory(prefix="codex-home-", dir=home_root) as home, \
            tempfile.TemporaryDirectory(prefix="codex-work-") as scratch:
        home_path = Path(home)
        (home_path / "config.toml").write_text(config_toml(
            base_url, model=model, with_key=api_key is not None, retries=retries,
            stream_idle_timeout_ms=stream_idle_timeout_ms, minimal_tools=minimal_tools, extra=extra_config))
        env = _base_env() | {"CODEX_HOME": home, "HOME": home}
        if api_key is not None:
            env[API_KEY_ENV] = api_key
        env.update(extra_env or {})
        args = [str(binary), "exec", "--strict-config", "--skip-git-repo-check", "--ephemeral", "--ignore-rules",
                "--sandbox", "read-only", "--color", "never", "--model", model]
        if json_events:
            args.append("--json")
        args += [*extra_args, "--", prompt]
        started = time.monotonic()
        process = subprocess.Popen(args, cwd=workdir or scratch, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        timed_out = False
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the group this call started, by its id
            except ProcessLookupError:
                pass
            stdout, stderr = process.communicate()
        seconds = time.monotonic() - started
    events = _parse_events(stdout.splitlines()) if json_events else []
    return CodexResult(process.returncode, stdout, stderr, events, seconds, timed_out)


def _parse_events(lines: Iterable[str]) -> list[dict[str, Any]]:
    events = []
    for line in lines:
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
    return events

