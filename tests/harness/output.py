"""A runtime's output, each line attributed to the test whose request wrote it.

Many tests share one runtime (tests/harness/pool.py), and a request can go on writing after
its test has ended: a collected answer whose client left, a fallback call, a task that
Python's collector destroys later. So a line's test is not the one holding the runtime when
the line arrives. The Worker names its request in every line it writes (`"request_id"`,
src/chat/logs.py), and the harness reads that:

- a line naming a request belongs to the test that first saw that request: the test
  holding the runtime when the request's first line arrived, or the test that read the id
  from a response before then (`claim`, done by the `http` fixture for every response);
- a line naming none (wrangler's, workerd's, the emulator's) belongs to the test holding
  the runtime when it arrived, or, between tests, to the last one that held it.

The same output is also searched for what must never pass unnoticed: a crash of the
runtime (`crash_lines`) and an error nobody expected (`error_lines`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Iterable, Iterator

# In Pyodide a stack overflow or an out-of-memory is not a Python exception: workerd aborts
# the isolate, every stream in flight is cut, and wrangler restarts the runtime, after
# which requests succeed again. Only the runtime's output tells, in these words.
CRASH_MARKERS = (
    "Pyodide has suffered a fatal error",
    "Fatal uncaught",
    "abortIsolate",
    "crashed unexpectedly",
    # V8 out of memory in workerd itself (the attack of issue 31: a held answer past the heap).
    "Reached heap limit",
    "V8 fatal error",
    # Not a crash, but as bad: the emulator could not get its script from the pool
    # (ai_emulator/emulator.js, currentVars), so the test's upstream was never its own.
    "ai_script_unavailable",
)

# What an error nobody expected looks like in a runtime's output. A test that provokes one
# on purpose says so (`@pytest.mark.expected_errors(...)`, tests/conftest.py); any other
# fails the test that owns the line, or the session when the line came after its test.
ERROR_MARKERS = (
    '"level":"error"',  # the Worker's alarms (chat.platform.ffi.alarm): internal_error, async_error, ...
    "Task was destroyed but it is pending",  # Python's own words, should a report bypass the Worker's handler
    "was never retrieved",
    "Traceback (most recent call last)",
    "Exception ignored",
    "Uncaught",  # workerd: a JS exception or rejection nobody handled
)

# Not an error of the Worker: the emulated binding failing as its script says. The emulator
# is a Worker of its own whose run() throws what Workers AI's binding throws ("3040:
# Capacity temporarily exceeded"), and workerd reports every exception an RPC method
# throws as "Uncaught" on the callee's side, though the caller catches it (seen on every
# scripted failure, 2026-12-06). The real binding fails in the caller's isolate, unlogged.
EMULATED_BINDING_FAILURE = re.compile(r"Uncaught (?:InferenceUpstreamError|Error): \d+: ")

# workerd's report when /api/chat/raw's native pipe loses an upstream that failed mid-stream:
# the pass-through is torn, by design (test_upstream_error_logs.py). Expected only by tests
# that make the raw route's upstream fail.
RAW_UPSTREAM_LOST = "ReadableStream received over RPC disconnected prematurely"

# wrangler colours its output: CSI sequences such as "\x1b[41;97m" may sit inside a marker.
ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
# The Worker's request ids: 128 random bits in hex (chat.web.exchange).
REQUEST_ID = re.compile(r'"request_id":"([0-9a-f]{32})"')

NO_TEST = 0


def plain(line: str) -> str:
    return ANSI_ESCAPE.sub("", line)


def crash_lines(lines: Iterable[str]) -> list[str]:
    """The lines, without colour codes, that report a crash of the runtime."""
    return [line for line in map(plain, lines) if any(marker in line for marker in CRASH_MARKERS)]


def is_error(line: str) -> bool:
    """Whether a line (without colour codes) reports an error or a crash."""
    if EMULATED_BINDING_FAILURE.search(line):
        return False
    return any(marker in line for marker in ERROR_MARKERS + CRASH_MARKERS)


def request_of(line: str) -> str | None:
    found = REQUEST_ID.search(line)
    return found.group(1) if found else None


class RuntimeOutput:
    """Every line one runtime printed, in order, with the lease (test) each belongs to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        # owners[i] is the lease of lines[i]; appended first, so never shorter than lines.
        self.owners: list[int] = []
        # The test holding the runtime now, or the last to hold it (set by the pool): output
        # of no request that comes between two tests is most likely the late output of the
        # one before (a report workerd prints just after a request ended).
        self.lease = NO_TEST
        # Earlier tests' leases the current test reads as its own: a run of scenarios made
        # once for several tests (the page's, tests/frontends/conftest.py) is each one's.
        self.shared: set[int] = set()
        self._requests: dict[str, int] = {}  # request id -> the lease that first saw it
        self._lock = threading.Lock()  # the collector's thread adds, the test's claims

    def add(self, line: str) -> None:
        request_id = request_of(line)
        with self._lock:
            owner = self.lease if request_id is None else self._requests.setdefault(request_id, self.lease)
            self.owners.append(owner)
            self.lines.append(line)

    def claim(self, request_id: str) -> None:
        """The test holding the runtime read `request_id` in a response: its lines are the
        test's, even those that come after it ended."""
        with self._lock:
            self._requests.setdefault(request_id, self.lease)

    def owned(self, leases: int | Collection[int], since: int = 0) -> Iterator[tuple[int, str]]:
        """(index, line) of the lines from `since` on that belong to `leases` (one or several)."""
        wanted = {leases} if isinstance(leases, int) else set(leases)
        for index in range(since, len(self.lines)):
            if self.owners[index] in wanted:
                yield index, self.lines[index]

    def lines_of(self, leases: int | Collection[int], since: int = 0) -> list[str]:
        return [line for _, line in self.owned(leases, since)]

    def readable(self) -> set[int]:
        """The leases whose lines the current test reads as its own."""
        return {self.lease, *self.shared}

    def request_owner(self, request_id: str) -> int | None:
        return self._requests.get(request_id)
