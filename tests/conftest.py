from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from tests.runtime.harness import LocalRuntime, RuntimeOptions, RuntimePool


@pytest.fixture(scope="session")
def runtime_pool() -> Iterator[RuntimePool]:
    pool = RuntimePool()
    yield pool
    pool.close()


@pytest.fixture
def start_runtime(runtime_pool: RuntimePool) -> Callable[..., LocalRuntime]:
    """Return a function giving a running local runtime for the options asked for."""

    def start(options: RuntimeOptions | None = None) -> LocalRuntime:
        return runtime_pool.get(options or RuntimeOptions())

    return start


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
        yield client
