"""Start the real local runtime (devtools/dev.py: wrangler dev, workerd, Pyodide) for tests.

A `LocalRuntime` is one `make dev`-equivalent process on a free port, with its stdout
collected so tests can assert on the Worker's and the emulator's log lines, and so that a
crash of the runtime fails the tests that were using it (tests/conftest.py). With
`RuntimeOptions(workerd_direct=True)` it is the production-like runtime instead
(devtools/workerd_direct.py: workerd alone, no wrangler, no proxy), with the same options
and the same helpers. Its emulator answers in the test vocabulary (`ai_style="words"`:
multi-byte characters, quotes, "[DONE]"), not in `make dev`'s readable markdown, unless a
test asks for that.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from devtools.dev import emulator_config, free_port, parse_args
from tests.harness.output import ANSI_ESCAPE, RuntimeOutput, crash_lines, is_error, plain

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 120.0
HUNG_REPORT = "detected that your Worker's code had hung"
ADDRESS_IN_USE = "Address already in use"
PORT_ATTEMPTS = 3


def wrangler_config() -> Any:
    """The Worker's configuration as wrangler.toml's [vars] give it (chat.config.Config),
    for tests that go just past a limit of the default runtime."""
    import tomllib

    from chat.config import Config

    variables = tomllib.loads((ROOT / "wrangler.toml").read_text(encoding="utf-8")).get("vars", {})
    return Config.from_env(variables.get)


# The default runtime's body limit besides images (Config.body_limit: its models' context windows).
BODY_LIMIT: int = wrangler_config().body_limit

# The crash is printed shortly after the cut-off requests return (about 50 ms measured).
OUTPUT_QUIET_S = 0.2


@dataclass(frozen=True, kw_only=True)
class RuntimeOptions:
    """What a runtime is started with; equal options can share one runtime."""

    ai_script: str | None = None  # the script as JSON text (tests/harness/scenarios.py builds it)
    # "native" or "openai" overrides every model's framing (most suites test the stream
    # core on native frames); None streams each model in its own, as Workers AI does.
    ai_format: str | None = "native"
    # "words" (dev.py --ai-style): the emulator's test vocabulary of multi-byte characters,
    # quotes, "data:" and "[DONE]" that re-framing must keep intact, not make dev's default
    # readable markdown ("prose", tests/runtime/test_emulator_prose.py).
    ai_style: str = "words"
    ai_plan: str = "paid"
    ai_pace: float = 40.0
    ai_reply_tokens: int = 0
    ai_frames_per_chunk: int = 3
    ai_stamp_tokens: bool = False
    # dev.py --ai-quirks: upstream quirks the generated replies carry, comma-separated
    # ("numbers,error_midway"; ai_emulator/quirks.js REPLY_QUIRKS); "" for none.
    ai_quirks: str = ""
    variables: tuple[tuple[str, str], ...] = ()
    main: str | None = None  # another Worker module with the same bindings (benchmarks)
    # Chat requests per client per 60 s (dev.py --rate-limit): None = wrangler.toml's limit,
    # 0 = no limiter binding. The default is far above any suite's traffic (the load tests
    # send hundreds of requests from one address), so only tests that set it meet the limit.
    rate_limit: int | None = 1_000_000
    # devtools/workerd_direct.py instead of devtools/dev.py: the same Worker, bindings and
    # options in workerd alone (no wrangler, no dev proxy, no inspector), for CPU figures
    # that compare with production. It takes its own free port and names it when ready.
    workerd_direct: bool = False
    v8_flags: tuple[str, ...] = ()  # workerd_direct only: V8 flags for every isolate
    persist_to: str | None = None  # Durable Object state kept here, across runtimes
    # A runtime of this test's own, started for it and stopped after it (tests/harness/pool.py):
    # for figures about the runtime itself (its memory) and suites that another test's traffic
    # on a shared runtime could sway. Costs a start: say why where it is set.
    isolated: bool = False


EMULATOR_FIELDS = ("ai_format", "ai_style", "ai_plan", "ai_pace", "ai_reply_tokens", "ai_frames_per_chunk", "ai_stamp_tokens", "ai_quirks")


def emulator_arguments(options: RuntimeOptions) -> list[str]:
    """The launcher's flags for the emulator's settings in `options` (all but its script)."""
    arguments = [] if options.ai_format is None else ["--ai-format", options.ai_format]
    arguments += ["--ai-style", options.ai_style, "--ai-plan", options.ai_plan, "--ai-pace", str(options.ai_pace)]
    if options.ai_reply_tokens:
        arguments += ["--ai-reply-tokens", str(options.ai_reply_tokens)]
    arguments += ["--ai-frames-per-chunk", str(options.ai_frames_per_chunk)]
    if options.ai_stamp_tokens:
        arguments.append("--ai-stamp-tokens")
    if options.ai_quirks:
        arguments += ["--ai-quirks", options.ai_quirks]
    return arguments


def emulator_settings(options: RuntimeOptions) -> dict[str, str]:
    """The emulator's vars for `options`, as the launchers set them (devtools/dev.py), less
    the catalog and the script."""
    variables = emulator_config(parse_args(emulator_arguments(options)), "")["vars"]
    return {key: value for key, value in variables.items() if key not in ("AI_CATALOG", "AI_SCRIPT")}


_JSON = json.JSONDecoder()


@dataclass
class LocalRuntime:
    options: RuntimeOptions
    port: int = field(default_factory=free_port)
    # Everything it printed, each line with the test it belongs to (tests/harness/output.py).
    output: RuntimeOutput = field(default_factory=RuntimeOutput)
    _process: subprocess.Popen[str] | None = None
    _collector: threading.Thread | None = None
    _last_line_at: float = 0.0  # time.monotonic() when the last line arrived
    _script_file: Path | None = None
    # Where the emulator fetches its script on every call instead (tests/harness/pool.py
    # serves one per runtime there), so one runtime replays many tests' scripts.
    script_url: str | None = None
    # Where the output of the test now holding it begins (the pool sets it): what the methods
    # below read by default, so that no test reads another test's lines on a shared runtime.
    test_mark: int = 0

    @property
    def lines(self) -> list[str]:
        """Every line printed so far, whoever's: `len(runtime.lines)` marks a point in it."""
        return self.output.lines

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalRuntime:
        # wrangler needs a port chosen beforehand; another process can take it between the
        # probe and wrangler's bind, so a start that lost that race is retried on a new one.
        for attempt in range(PORT_ATTEMPTS):
            try:
                return self._start_once()
            except RuntimeError:
                lost_port_race = any(ADDRESS_IN_USE in line for line in self.lines)
                if not lost_port_race or attempt == PORT_ATTEMPTS - 1:
                    raise
                self.output = RuntimeOutput()
                self.port = free_port()
        raise AssertionError("unreachable")

    def _start_once(self) -> LocalRuntime:
        launcher = "workerd_direct.py" if self.options.workerd_direct else "dev.py"
        port = 0 if self.options.workerd_direct else self.port  # 0: no race for a port probed earlier
        command = [sys.executable, str(ROOT / "devtools" / launcher), "--port", str(port), *emulator_arguments(self.options)]
        if self.options.main:
            command += ["--main", self.options.main]
        if self.options.rate_limit is not None:
            command += ["--rate-limit", str(self.options.rate_limit)]
        if self.script_url is not None:
            command += ["--ai-script-url", self.script_url]
        elif self.options.ai_script is not None:
            handle, name = tempfile.mkstemp(prefix="ai-script-", suffix=".json")
            os.write(handle, self.options.ai_script.encode())
            os.close(handle)
            self._script_file = Path(name)
            command += ["--ai-script", name]
        for key, value in self.options.variables:
            command += ["--var", f"{key}:{value}"]
        command += [f"--v8-flag={flag}" for flag in self.options.v8_flags]
        if self.options.persist_to is not None:
            command += ["--persist-to", self.options.persist_to]
        self._process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            encoding="utf-8", errors="replace", start_new_session=True,
        )
        self._collector = threading.Thread(target=self._collect, daemon=True)
        self._collector.start()
        self._wait_until_serving()
        return self

    def _collect(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self.output.add(line.rstrip("\n"))
            self._last_line_at = time.monotonic()

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not (ready := [line for line in self.lines if "Ready on http://" in line]):
            self._check_alive(deadline)
            time.sleep(0.1)
        if self.options.workerd_direct:
            self.port = int(ANSI_ESCAPE.sub("", ready[0]).rsplit(":", 1)[1].strip())
        # The first request initialises Python in the isolate; wait for it here, not in a test.
        while True:
            self._check_alive(deadline)
            try:
                if httpx.get(f"{self.url}/health", timeout=30).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)

    def _check_alive(self, deadline: float) -> None:
        assert self._process is not None
        if self._process.poll() is not None or time.monotonic() > deadline:
            output = "\n".join(self.lines[-60:])
            self.stop()
            raise RuntimeError(f"local runtime did not become ready:\n{output}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
        if self._collector is not None:
            self._collector.join(timeout=10)  # every line printed before the end is read
        if self._script_file is not None:
            self._script_file.unlink(missing_ok=True)

    # --- reading what the runtime printed ---------------------------------------------

    def own_lines(self, since: int | None = None) -> list[str]:
        """The lines of the test now holding the runtime, from line `since` on (by default,
        from where the test began): those of its requests, and those naming no request
        that came while it held the runtime (tests/harness/output.py)."""
        return self.output.lines_of(self.output.readable(), self.test_mark if since is None else since)

    def records(self, since: int | None = None) -> Iterator[dict[str, Any]]:
        """JSON log records printed by the Worker or the emulator (prefixes stripped) for the
        test now holding the runtime, from line `since` on (by default, from where it began)."""
        for line in self.own_lines(since):
            start = line.find("{")
            if start < 0:
                continue
            try:
                # raw_decode: wrangler dev wraps a console.error line in colour codes.
                record, _ = _JSON.raw_decode(line, start)
            except ValueError:
                continue
            if isinstance(record, dict) and "event" in record:
                yield record

    def wait_for_record(self, event: str, since: int | None = None, timeout: float = 10.0, **match: Any) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for record in self.records(since):
                if record["event"] == event and all(record.get(k) == v for k, v in match.items()):
                    return record
            time.sleep(0.05)
        raise AssertionError(f"no {event} record {match} within {timeout}s; saw {[r['event'] for r in self.records(since)]}")

    def wait_for_count(self, event: str, count: int, since: int | None = None, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait until `count` records of `event` were printed (log lines arrive asynchronously)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [r for r in self.records(since) if r["event"] == event]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def wait_for_line(self, text: str, since: int | None = None, timeout: float = 10.0) -> str:
        """The test's first line from `since` on that contains `text` (colour codes removed),
        waited for: output about a request can arrive after its response."""
        deadline = time.monotonic() + timeout
        while True:
            found = [line for line in map(plain, self.own_lines(since)) if text in line]
            if found:
                return found[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"no line with {text!r} within {timeout}s")
            time.sleep(0.05)

    def hung_reports(self, since: int | None = None) -> list[str]:
        return [line for line in self.own_lines(since) if HUNG_REPORT in line]

    def crash_lines(self, since: int | None = None) -> list[str]:
        """The test's lines from index `since` on that report a crash of the runtime (colour
        codes removed)."""
        return crash_lines(self.own_lines(since))

    def error_lines(self, lease: int | None = None, since: int = 0) -> list[tuple[int, str]]:
        """(index, line without colour codes) of the lines from `since` on that report an
        error or a crash: `lease`'s, or everyone's."""
        owned = enumerate(self.lines) if lease is None else self.output.owned(lease, since)
        found = ((index, plain(line)) for index, line in owned if index >= since)
        return [(index, line) for index, line in found if is_error(line)]

    def wait_until_quiet(self, quiet: float = OUTPUT_QUIET_S, timeout: float = 2.0) -> None:
        """Wait until nothing has been printed for `quiet` seconds, counted from now at the
        earliest: output about a request can arrive after its response."""
        if self._collector is None or not self._collector.is_alive():
            return  # stopped: everything it printed has been read
        start = time.monotonic()
        deadline = start + timeout
        while (now := time.monotonic()) < deadline:
            silent_for = now - max(start, self._last_line_at)
            if silent_for >= quiet:
                return
            time.sleep(quiet - silent_for)
