"""Fixtures for the frontend tests: the page driven in headless Chromium, the CLI run as a
process. Both run against the real local runtime from tests/conftest.py's pool."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness.runtime import ROOT, LocalRuntime, RuntimeOptions

NODE = ROOT / ".venv" / "bin" / "node"
DRIVER = Path(__file__).with_name("page_driver.mjs")
CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CLI = ROOT / "clients" / "chat_cli"  # a package: `python clients/chat_cli` runs it
DEFAULT_MODEL = tomllib.loads((ROOT / "wrangler.toml").read_text())["vars"]["MODEL"]


@dataclass
class PageRun:
    """One driver run: the scenarios' reports and where the runtime's log stood before."""

    runtime: LocalRuntime
    mark: int
    reports: dict[str, dict[str, Any]]
    lease: int  # the test that ran it: its lines are every test's that shares the run

    def report(self, scenario: str) -> dict[str, Any]:
        """The scenario's report, checked to have run to its end on a page that loaded."""
        report = self.reports[scenario]
        assert "failed" not in report, report["failed"]
        assert report["pageStatus"] == 200 and report["pageErrors"] == [], report
        return report


def drive_pages(url: str, scenarios: tuple[str, ...], screenshot: Path | None = None, script_url: str | None = None) -> dict[str, dict[str, Any]]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium (as root), or set CHROMIUM_PATH to another")
    command = [str(NODE), str(DRIVER), url, ",".join(scenarios)]
    if screenshot is not None:
        command.append(str(screenshot))
    # The driver stops itself (and its browser) after 60 s; the timeout here is a backstop.
    # SCRIPT_URL: where the driver releases a held step (tests/harness/scenarios.py, held).
    env = {**os.environ, **({"SCRIPT_URL": script_url} if script_url else {})}
    finished = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    lines = finished.stdout.strip().split("\n")  # not splitlines: JSON may hold U+2028
    if not lines:
        pytest.fail(f"the page driver printed nothing (exit {finished.returncode}):\n{finished.stderr}")
    result = json.loads(lines[-1])
    assert "failed" not in result, f"{result['failed']}\n{finished.stderr}"
    return result["scenarios"]


@pytest.fixture(scope="session")
def page_runs() -> dict[tuple[str, RuntimeOptions, tuple[str, ...]], PageRun]:
    return {}


@pytest.fixture
def run_pages(start_runtime, page_runs) -> Callable[..., PageRun]:
    """Run page scenarios side by side against a runtime, once per session: the tests that
    share a run each assert on their own scenario's report."""

    def run(options: RuntimeOptions, scenarios: tuple[str, ...], screenshot: Path | None = None) -> PageRun:
        runtime = start_runtime(options)
        key = (runtime.url, options, scenarios)
        if key not in page_runs:
            mark = len(runtime.lines)
            reports = drive_pages(runtime.url, scenarios, screenshot, runtime.script_url)
            page_runs[key] = PageRun(runtime, mark, reports, runtime.output.lease)
        runtime.output.shared.add(page_runs[key].lease)
        return page_runs[key]

    return run


@dataclass(frozen=True)
class CliRun:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def status(self) -> str:
        """The status line: the last line on stderr."""
        lines = self.stderr.rstrip("\n").split("\n")
        assert lines != [""], "the CLI wrote no status line"
        return lines[-1]

    @property
    def ending(self) -> str:
        return ending(self.status)


# What a status line says beyond how the answer ended: the model, the tokens, the finish_reason.
DETAILS = re.compile(r" (?:model|tokens|finish)=\S+")


def ending(status: str) -> str:
    """A status line without its details: how the answer ended, and its counts."""
    return DETAILS.sub("", status)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> CliRun:
    finished = subprocess.run(
        [sys.executable, str(CLI), *args], check=False, cwd=ROOT, capture_output=True, timeout=timeout,
        env={**{k: v for k, v in os.environ.items() if k != "CHAT_TOKEN"}, "PYTHONIOENCODING": "utf-8", **(env or {})},
    )
    return CliRun(finished.returncode, finished.stdout.decode(), finished.stderr.decode())
