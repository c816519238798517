from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings

from tests.harness.pool import RuntimePool
from tests.harness.runtime import ROOT, LocalRuntime, RuntimeOptions

# Hypothesis profiles for every property test. `ci` (the default) draws the same examples
# every run, so a run answers the same way every time (a failure is the change's, not the
# draw's); `fuzz` explores new examples at high counts: HYPOTHESIS_PROFILE=fuzz.
settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True)
settings.register_profile("fuzz", max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

RUNTIME_POOL = pytest.StashKey[RuntimePool]()
SESSION_ERRORS = pytest.StashKey[list[str]]()


RUNTIME_FIXTURES = {"start_runtime", "runtime_pool", "run_pages"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that takes a runtime `runtime`, so that `make check` can leave all but
    its smoke tests out (`-m "not runtime or smoke"`); put the heavy files first."""
    for item in items:
        if RUNTIME_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.runtime)
    # The files of the long load and fuzz suites first: pytest-xdist hands files out in this
    # order, and one that starts last would finish minutes after the rest.
    heavy_files = {item.path for item in items if item.get_closest_marker("heavy")}
    items.sort(key=lambda item: item.path not in heavy_files)


@pytest.fixture(scope="session")
def runtime_pool(request: pytest.FixtureRequest) -> Iterator[RuntimePool]:
    pool = RuntimePool()
    request.config.stash[RUNTIME_POOL] = pool  # for the crash check at the end of the session
    yield pool
    pool.close()


@pytest.fixture
def start_runtime(runtime_pool: RuntimePool) -> Callable[..., LocalRuntime]:
    """Return a function giving a running local runtime for the options asked for."""

    def start(options: RuntimeOptions | None = None) -> LocalRuntime:
        return runtime_pool.get(options or RuntimeOptions())

    return start


@pytest.fixture(autouse=True)
def fail_on_runtime_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail every test whose requests made a runtime print an error it did not declare
    (`@pytest.mark.expected_errors`), or that held a runtime while it crashed: a crash cuts
    every stream in flight and wrangler restarts the runtime, so the test may still see
    plausible answers. Autouse fixtures are set up first, so runtimes taken by other
    fixtures count too. What comes after the test has ended fails the session instead."""
    if "start_runtime" not in request.fixturenames:
        yield
        return
    pool: RuntimePool = request.getfixturevalue("runtime_pool")
    marker = request.node.get_closest_marker("expected_errors")
    pool.begin_test(request.node.nodeid, tuple(marker.args) if marker else ())
    yield
    errors = pool.errors_in_test()
    pool.end_test()
    if errors:
        pytest.fail("the local runtime printed errors this test did not expect:\n" + "\n".join(errors), pytrace=False)


RUNTIME_STARTS = pytest.StashKey[list[dict[str, object]]]()  # every start, across xdist workers (pool.starts)
STARTS_REPORT = ROOT / ".dev" / "runtime-starts.json"


@pytest.hookimpl(trylast=True)  # after the session's fixtures are torn down: every runtime stopped
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run if any runtime printed a crash or an error that no test declared and no
    test was failed for: one printed between tests, or after its test's own check had
    looked (a task destroyed by Python's collector minutes later names the request, and so
    the test, it came from). Under pytest-xdist each worker has its own pool and hands its
    findings to the controller (`workeroutput`), which fails the run."""
    config = session.config
    pool = config.stash.get(RUNTIME_POOL, None)
    errors = config.stash.get(SESSION_ERRORS, []) + (pool.unexpected_errors() if pool is not None else [])
    starts = config.stash.get(RUNTIME_STARTS, []) + (pool.starts if pool is not None else [])
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["runtime_errors"] = errors
        workeroutput["runtime_starts"] = starts
    config.stash[SESSION_ERRORS] = errors
    config.stash[RUNTIME_STARTS] = starts
    if errors and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's controller: a worker has finished
def pytest_testnodedown(node: Any, error: object) -> None:
    output = getattr(node, "workeroutput", {})
    config = node.config
    config.stash[SESSION_ERRORS] = config.stash.get(SESSION_ERRORS, []) + output.get("runtime_errors", [])
    config.stash[RUNTIME_STARTS] = config.stash.get(RUNTIME_STARTS, []) + output.get("runtime_starts", [])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    starts = config.stash.get(RUNTIME_STARTS, [])
    if starts:
        # Each start costs seconds: growth here is what makes the suite slow (docs/testing.md).
        option_sets = {start["options"] for start in starts}
        seconds = sum(float(str(start["seconds"])) for start in starts)
        STARTS_REPORT.parent.mkdir(exist_ok=True)
        STARTS_REPORT.write_text(json.dumps(sorted(starts, key=lambda start: str(start["options"])), indent=1))
        terminalreporter.write_line(f"runtimes started: {len(starts)} for {len(option_sets)} option sets, in {seconds:.0f} s "
                                    f"(each in {STARTS_REPORT.relative_to(ROOT)})")
    errors = config.stash.get(SESSION_ERRORS, [])
    if errors:
        terminalreporter.write_sep("=", "runtimes printed errors no test expected, after their tests had ended", red=True)
        for line in errors:
            terminalreporter.write_line(line)


@pytest.fixture
async def http(request: pytest.FixtureRequest) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client whose every response's request id is claimed for the test, so that the
    lines its requests print later are still its own (tests/harness/output.py)."""

    async def claim(response: httpx.Response) -> None:
        pool = request.config.stash.get(RUNTIME_POOL, None)
        if pool is not None:
            pool.claim(str(response.url), response.headers.get("x-request-id"))

    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0), event_hooks={"response": [claim]}) as client:
        yield client
