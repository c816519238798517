"""Runtimes shared between tests.

Starting a runtime takes 5 to 15 s (esbuild, workerd, Python in the isolate; the more so on
a busy machine), so the pool keeps a few running and hands one out for every equal set of
the Worker's options. What the emulator does is not among them: the emulator fetches the
script and settings of each call from the pool's script server (dev.py --ai-script-url),
and the pool serves there whatever the test now holding the runtime asked for (its script,
pace, framing, style, quirks, ...). So every test with the same Worker settings shares one
runtime, whatever its upstream.

A runtime keeps state between tests that a script cannot reset: the rate limiter's counts
and the Durable Objects' storage. Options that reach them (a limit a test can meet, a state
directory) keep the emulator's options in the key, so such a test gets a runtime of its own.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.harness.output import NO_TEST
from tests.harness.runtime import EMULATOR_FIELDS, LocalRuntime, RuntimeOptions, emulator_settings

UNREACHABLE_RATE_LIMIT = RuntimeOptions().rate_limit
EMULATOR_DEFAULTS = {name: getattr(RuntimeOptions(), name) for name in EMULATOR_FIELDS}


class ScriptServer:
    """Serves each pooled runtime's current script and emulator settings at its own path."""

    def __init__(self) -> None:
        self._scripts: dict[str, str] = {}
        scripts = self._scripts
        released: set[str] = set()  # "<runtime>/released/<name>"

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                if "/released/" in self.path:  # a held step asking (scenarios.held)
                    self._answer(200 if self.path.lstrip("/") in released else 404, "null")
                    return
                self._answer(*((200, body) if (body := scripts.get(self.path.lstrip("/"))) is not None else (404, "null")))

            def do_POST(self) -> None:  # noqa: N802 - a test releasing a held step (ScriptServer.release)
                released.add(self.path.lstrip("/"))
                self._answer(200, "null")

            def _answer(self, status: int, body: str) -> None:
                payload = body.encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def new_path(self) -> str:
        """The address of a new runtime's script, serving none yet."""
        name = secrets.token_hex(8)
        self._scripts[name] = served(RuntimeOptions())
        return f"http://127.0.0.1:{self._server.server_address[1]}/{name}"

    def serve(self, url: str, options: RuntimeOptions) -> None:
        self._scripts[url.rsplit("/", 1)[1]] = served(options)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def sharing_key(options: RuntimeOptions) -> RuntimeOptions:
    """The options a runtime is started with for these: the emulator's left out where no
    state carries from one test to the next."""
    if options.rate_limit == UNREACHABLE_RATE_LIMIT and options.persist_to is None:
        return dataclasses.replace(options, ai_script=None, **EMULATOR_DEFAULTS)
    return options


def describe(options: RuntimeOptions) -> str:
    """The options that differ from the defaults, the script left out: what a start was for."""
    default = RuntimeOptions()
    return ", ".join(f"{field.name}={getattr(options, field.name)!r}" for field in dataclasses.fields(options)
                     if field.name != "ai_script" and getattr(options, field.name) != getattr(default, field.name)) or "defaults"


def served(options: RuntimeOptions) -> str:
    """What the script server serves for a runtime replaying `options`."""
    script = None if options.ai_script is None else json.loads(options.ai_script)
    return json.dumps({"script": script, "settings": emulator_settings(options)})


@dataclass(frozen=True)
class Lease:
    """One test's hold on the runtimes it takes: what its lines are attributed to."""

    number: int
    test: str  # the test's node id
    expected_errors: tuple[str, ...] = ()  # what of its errors it provokes on purpose

    def expects(self, line: str) -> bool:
        return any(expected in line for expected in self.expected_errors)


class RuntimePool:
    """Keeps a few runtimes alive across tests, keyed by their options without the script,
    and remembers which runtimes each test used so that a crash or an unexpected error
    fails the test whose request printed it."""

    def __init__(self, capacity: int = 8) -> None:
        self._capacity = capacity
        self._scripts = ScriptServer()
        self._runtimes: list[tuple[RuntimeOptions, LocalRuntime]] = []  # least recently used first
        self.started: list[LocalRuntime] = []  # every runtime started, running or stopped
        self.starts: list[dict[str, object]] = []  # each start: seconds, the options it was for, the test
        self._test_marks: dict[int, int] = {}  # id(runtime) -> its line count when the test began
        self._used_in_test: dict[int, LocalRuntime] = {}
        self._leases: dict[int, int] = {}  # id(runtime) -> how many tests it was handed to
        self._isolated: list[LocalRuntime] = []  # started for the current test alone
        self._numbers = itertools.count(NO_TEST + 1)
        self.lease = Lease(NO_TEST, "(before any test)")
        self.leases: dict[int, Lease] = {NO_TEST: self.lease}
        self._reported: set[tuple[int, int]] = set()  # (id(runtime), line index): errors already failing a test

    def get(self, options: RuntimeOptions) -> LocalRuntime:
        """A running runtime replaying `options.ai_script`. Within one test, two scripts on
        equal settings get two runtimes: the test may use both at once."""
        if options.isolated:
            return self._start_isolated(options)
        key = sharing_key(options)
        runtime = self._take(key, options)
        if runtime is None:
            while len(self._runtimes) >= self._capacity and any(id(r) not in self._used_in_test for _, r in self._runtimes):
                self._evict()
            script_url = self._scripts.new_path()
            runtime = LocalRuntime(key, script_url=script_url)
            self._scripts.serve(script_url, options)
            self.started.append(runtime)
            self._start(runtime, key)
        else:
            assert runtime.script_url is not None
            self._scripts.serve(runtime.script_url, options)
        runtime.options = options
        runtime.output.lease = self.lease.number
        if id(runtime) not in self._used_in_test:
            runtime.test_mark = self._test_marks.get(id(runtime), 0)  # 0: started for this test
        self._runtimes.append((key, runtime))  # most recently used last
        self._used_in_test[id(runtime)] = runtime
        self._leases[id(runtime)] = self._leases.get(id(runtime), 0) + 1
        return runtime

    def _start_isolated(self, options: RuntimeOptions) -> LocalRuntime:
        runtime = LocalRuntime(options)  # test_mark 0: all of its output is this test's
        runtime.output.lease = self.lease.number
        self._start(runtime, options)
        self._isolated.append(runtime)
        self._used_in_test[id(runtime)] = runtime
        return runtime

    def _start(self, runtime: LocalRuntime, key: RuntimeOptions) -> None:
        self.started.append(runtime)
        began = time.monotonic()
        runtime.start()
        self.starts.append({"seconds": round(time.monotonic() - began, 1), "options": describe(key), "test": self.lease.test})

    def _evict(self) -> None:
        """Stop the runtime handed out least often (of equals, the least recently used): the
        settings most tests share stay running through a run of one-off ones."""
        idle = [i for i, (_, runtime) in enumerate(self._runtimes) if id(runtime) not in self._used_in_test]
        if not idle:
            return  # every one is this test's: over capacity until the next test
        index = min(idle, key=lambda i: self._leases.get(id(self._runtimes[i][1]), 0))
        self._runtimes.pop(index)[1].stop()

    def _take(self, key: RuntimeOptions, options: RuntimeOptions) -> LocalRuntime | None:
        """Remove and return a running runtime for `key` that this test may re-script: one
        it has not used, or one already replaying `options`."""
        for index, (held_key, runtime) in enumerate(self._runtimes):
            if held_key != key:
                continue
            if id(runtime) not in self._used_in_test or runtime.options == options:
                del self._runtimes[index]
                return runtime
        return None

    def end_test(self) -> None:
        """Stop the runtimes this test had of its own (after its checks). What the others
        print that names no request is still this test's until another takes them."""
        for runtime in self._used_in_test.values():
            runtime.output.shared.clear()
        while self._isolated:
            self._isolated.pop().stop()

    def begin_test(self, test: str, expected_errors: tuple[str, ...] = ()) -> None:
        """Start a new lease for `test`: forget the runtimes used so far and note where each
        running one's output stands."""
        self.end_test()
        self.lease = Lease(next(self._numbers), test, expected_errors)
        self.leases[self.lease.number] = self.lease
        self._test_marks = {id(runtime): len(runtime.lines) for _, runtime in self._runtimes}
        self._used_in_test = {}

    def claim(self, url: str, request_id: str | None) -> None:
        """A response from `url` named `request_id`: that request is the current test's."""
        if request_id is None:
            return
        for runtime in self._used_in_test.values():
            if url.startswith(runtime.url + "/"):
                runtime.output.claim(request_id)

    def errors_in_test(self) -> list[str]:
        """Error lines of the current test's own requests (and of no request, printed while it
        held the runtime) that it did not declare, each with its runtime's address; waits for
        the output to settle first. Reported once: the session's check leaves them out."""
        found = []
        for runtime in self._used_in_test.values():
            runtime.wait_until_quiet()
            since = self._test_marks.get(id(runtime), 0)  # 0: started during the test
            for index, line in runtime.error_lines(self.lease.number, since):
                if not self.lease.expects(line):
                    self._reported.add((id(runtime), index))
                    found.append(f"{runtime.url}: {line}")
        return found

    def unexpected_errors(self) -> list[str]:
        """Error lines of any runtime this pool started that no test declared and none was
        failed for: printed after their test had ended, or between tests. Each names the
        test its request belonged to."""
        found = []
        for runtime in self.started:
            for index, line in runtime.error_lines():
                lease = self.leases[runtime.output.owners[index]]
                if (id(runtime), index) not in self._reported and not lease.expects(line):
                    found.append(f"{runtime.url}: {line}  [{lease.test}]")
        return found

    def close(self) -> None:
        while self._isolated:
            self._isolated.pop().stop()
        for _, runtime in self._runtimes:
            runtime.stop()
        self._runtimes.clear()
        self._scripts.close()
