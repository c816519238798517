from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from tests.harness.pool import RuntimePool
from tests.harness.runtime import LocalRuntime, RuntimeOptions

RUNTIME_POOL = pytest.StashKey[RuntimePool]()
SESSION_CRASHES = pytest.StashKey[list[str]]()


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
    if crashes:
        pytest.fail("the local runtime crashed during this test:\n" + "\n".join(crashes), pytrace=False)


@pytest.hookimpl(trylast=True)  # after the session's fixtures are torn down: every runtime stopped
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run if any runtime printed a crash at any time, even between tests or
    after a test's own check had looked."""
    pool = session.config.stash.get(RUNTIME_POOL, None)
    crashes = pool.crash_lines() if pool is not None else []
    session.config.stash[SESSION_CRASHES] = crashes
    if crashes and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    pool = config.stash.get(RUNTIME_POOL, None)
    if pool is not None and pool.started:
        # Each start costs seconds: growth here is what makes the suite slow (docs/testing.md).
        terminalreporter.write_line(f"runtimes started: {len(pool.started)}, in {pool.start_seconds:.0f} s")
    crashes = config.stash.get(SESSION_CRASHES, [])
    if crashes:
        terminalreporter.write_sep("=", "the local runtime crashed during the session", red=True)
        for line in crashes:
            terminalreporter.write_line(line)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
        yield client
