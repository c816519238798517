"""Start the real local runtime (devtools/dev.py: wrangler dev, workerd, Pyodide) for tests.

A `LocalRuntime` is one `make dev`-equivalent process on a free port, with its stdout
collected so tests can assert on the Worker's and the emulator's log lines.
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from devtools.dev import free_port

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 120.0
HUNG_REPORT = "detected that your Worker's code had hung"


@dataclass(frozen=True, kw_only=True)
class RuntimeOptions:
    """What a runtime is started with; equal options can share one runtime."""

    ai_script: str | None = None  # the script as JSON text
    ai_format: str = "native"
    ai_pace: float = 40.0
    ai_reply_tokens: int = 0
    ai_frames_per_chunk: int = 3
    ai_stamp_tokens: bool = False
    variables: tuple[tuple[str, str], ...] = ()
    main: str | None = None  # another Worker module with the same bindings (benchmarks)

    @staticmethod
    def scripted(
        steps: Sequence[dict[str, Any]] = (),
        fail_start: str | None = None,
        *,
        prompts: dict[str, dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> RuntimeOptions:
        """A scripted upstream; `prompts` maps a last user message to a script of its own."""
        script: dict[str, Any] = {"steps": list(steps)}
        if fail_start is not None:
            script["fail_start"] = fail_start
        if prompts is not None:
            script["prompts"] = prompts
        return RuntimeOptions(ai_script=json.dumps(script), **kwargs)


@dataclass
class LocalRuntime:
    options: RuntimeOptions
    port: int = field(default_factory=free_port)
    lines: list[str] = field(default_factory=list)
    _process: subprocess.Popen[str] | None = None
    _script_file: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalRuntime:
        command = [sys.executable, str(ROOT / "devtools" / "dev.py"), "--port", str(self.port)]
        command += ["--ai-format", self.options.ai_format, "--ai-pace", str(self.options.ai_pace)]
        if self.options.ai_reply_tokens:
            command += ["--ai-reply-tokens", str(self.options.ai_reply_tokens)]
        command += ["--ai-frames-per-chunk", str(self.options.ai_frames_per_chunk)]
        if self.options.ai_stamp_tokens:
            command.append("--ai-stamp-tokens")
        if self.options.main:
            command += ["--main", self.options.main]
        if self.options.ai_script is not None:
            handle, name = tempfile.mkstemp(prefix="ai-script-", suffix=".json")
            os.write(handle, self.options.ai_script.encode())
            os.close(handle)
            self._script_file = Path(name)
            command += ["--ai-script", name]
        for key, value in self.options.variables:
            command += ["--var", f"{key}:{value}"]
        self._process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            encoding="utf-8", errors="replace", start_new_session=True,
        )
        threading.Thread(target=self._collect, daemon=True).start()
        self._wait_until_serving()
        return self

    def _collect(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self.lines.append(line.rstrip("\n"))

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not any("Ready on http://" in line for line in self.lines):
            self._check_alive(deadline)
            time.sleep(0.1)
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
        if self._script_file is not None:
            self._script_file.unlink(missing_ok=True)

    # --- reading what the runtime printed ---------------------------------------------

    def records(self, since: int = 0) -> Iterator[dict[str, Any]]:
        """JSON log records printed by the Worker or the emulator (prefixes stripped)."""
        for line in self.lines[since:]:
            start = line.find("{")
            if start < 0:
                continue
            try:
                record = json.loads(line[start:])
            except ValueError:
                continue
            if isinstance(record, dict) and "event" in record:
                yield record

    def wait_for_record(self, event: str, since: int = 0, timeout: float = 10.0, **match: Any) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for record in self.records(since):
                if record["event"] == event and all(record.get(k) == v for k, v in match.items()):
                    return record
            time.sleep(0.05)
        raise AssertionError(f"no {event} record {match} within {timeout}s; saw {[r['event'] for r in self.records(since)]}")

    def wait_for_count(self, event: str, count: int, since: int = 0, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait until `count` records of `event` were printed (log lines arrive asynchronously)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [r for r in self.records(since) if r["event"] == event]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def hung_reports(self) -> list[str]:
        return [line for line in self.lines if HUNG_REPORT in line]


class RuntimePool:
    """Keeps a few runtimes alive across tests, keyed by their options."""

    def __init__(self, capacity: int = 2) -> None:
        self._capacity = capacity
        self._runtimes: dict[RuntimeOptions, LocalRuntime] = {}

    def get(self, options: RuntimeOptions) -> LocalRuntime:
        runtime = self._runtimes.pop(options, None)
        if runtime is None:
            while len(self._runtimes) >= self._capacity:
                oldest = next(iter(self._runtimes))
                self._runtimes.pop(oldest).stop()
            runtime = LocalRuntime(options).start()
        self._runtimes[options] = runtime  # most recently used last
        return runtime

    def close(self) -> None:
        for runtime in self._runtimes.values():
            runtime.stop()
        self._runtimes.clear()
