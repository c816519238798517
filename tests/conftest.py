from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings

from tests.harness.pool import RuntimePool
from tests.harness.runtime import LocalRuntime, RuntimeOptions

# Hypothesis profiles for every property test. `ci` (the default) draws the same examples
# every run, so a run answers the same way every time (a failure is the change's, not the
# draw's); `fuzz` explores new examples at high counts: HYPOTHESIS_PROFILE=fuzz.
settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True)
settings.register_profile("fuzz", max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

RUNTIME_POOL = pytest.StashKey[RuntimePool]()
SESSION_CRASHES = pytest.StashKey[list[str]]()


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
def fail_when_a_runtime_crashes(request: pytest.FixtureRequest) -> Iterator[None]:
    """A crash of the runtime cuts every stream in flight and wrangler restarts it, so the
    test may still see plausible answers: fail every test whose runtimes printed one.
    Autouse fixtures are set up first, so runtimes taken by other fixtures count too."""
    if "start_runtime" not in request.fixturenames:
        yield
        return
    pool: RuntimePool = request.getfixturevalue("runtime_pool")
    pool.begin_test()
    yield
    crashes = pool.crash_lines_in_test()
    pool.end_test()
    if crashes:
        pytest.fail("the local runtime crashed during this test:\n" + "\n".join(crashes), pytrace=False)


RUNTIME_STARTS = pytest.StashKey[list[float]]()  # seconds per start, across xdist workers


@pytest.hookimpl(trylast=True)  # after the session's fixtures are torn down: every runtime stopped
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run if any runtime printed a crash at any time, even between tests or
    after a test's own check had looked. Under pytest-xdist each worker has its own pool and
    hands its findings to the controller (`workeroutput`), which fails the run."""
    config = session.config
    pool = config.stash.get(RUNTIME_POOL, None)
    crashes = config.stash.get(SESSION_CRASHES, []) + (pool.crash_lines() if pool is not None else [])
    starts = config.stash.get(RUNTIME_STARTS, []) + (pool.start_times if pool is not None else [])
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["runtime_crashes"] = crashes
        workeroutput["runtime_starts"] = starts
    config.stash[SESSION_CRASHES] = crashes
    config.stash[RUNTIME_STARTS] = starts
    if crashes and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's controller: a worker has finished
def pytest_testnodedown(node: Any, error: object) -> None:
    output = getattr(node, "workeroutput", {})
    config = node.config
    config.stash[SESSION_CRASHES] = config.stash.get(SESSION_CRASHES, []) + output.get("runtime_crashes", [])
    config.stash[RUNTIME_STARTS] = config.stash.get(RUNTIME_STARTS, []) + output.get("runtime_starts", [])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    starts = config.stash.get(RUNTIME_STARTS, [])
    if starts:
        # Each start costs seconds: growth here is what makes the suite slow (docs/testing.md).
        terminalreporter.write_line(f"runtimes started: {len(starts)}, in {sum(starts):.0f} s")
    crashes = config.stash.get(SESSION_CRASHES, [])
    if crashes:
        terminalreporter.write_sep("=", "the local runtime crashed during the session", red=True)
        for line in crashes:
            terminalreporter.write_line(line)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
        yield client
