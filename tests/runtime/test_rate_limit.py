"""Per-client rate limiting of the chat routes in the real runtime (miniflare's Rate Limiting
binding under wrangler dev, started by devtools/dev.py --rate-limit)."""

from __future__ import annotations

import asyncio
import itertools
import time
import tomllib

import pytest

from chat.ratelimit.keys import PERIOD_S
from tests.harness.client import USER, chat
from tests.harness.runtime import ROOT, RuntimeOptions
from tests.harness.scenarios import done_frame, echo, scripted_options, usage_frame

LIMIT = 3
TOKEN = "rate-limit-test-token-5e1f"
ANSWER = [echo(), usage_frame(5, 1), done_frame()]
# An operator's 64 KiB body limit, so that a body over it is small enough to send whole
# before the early answer (wrangler dev's proxy may answer 500 to an upload it is still
# forwarding when the Worker has answered; the default limit is 2 MB).
LIMITED = scripted_options(ANSWER, rate_limit=LIMIT, variables={"MAX_BODY_BYTES": "65536"})
DEFAULT_MAX_TOKENS = int(tomllib.loads((ROOT / "wrangler.toml").read_text())["vars"]["MAX_TOKENS"])
LATER_MAX_TOKENS = 7  # tells a request's model call apart in the emulator's log
ORIGIN = "https://app.example"

_addresses = itertools.count(1)


def fresh_address() -> str:
    """An address (TEST-NET-3) no other test used, so its budget is full."""
    return f"203.0.113.{next(_addresses)}"


async def in_one_window(needed_s: float = 15.0) -> None:
    """miniflare counts in windows aligned to the wall clock (window = now // period). A test
    whose requests straddled a window's end would see its budget refilled half-way, so it
    starts in a window with time to spare."""
    left = PERIOD_S - time.time() % PERIOD_S
    if left < needed_s:
        await asyncio.sleep(left + 0.5)


async def spend(http, url: str, address: str, **headers: str):
    """A chat request that costs no inference: refused (415) after the limiter counted it."""
    return await http.post(url + "/api/chat", content=b"{}", headers={"content-type": "text/plain", "cf-connecting-ip": address, **headers})


def assert_refused(response) -> None:
    assert response.status_code == 429
    assert response.headers["retry-after"] == str(PERIOD_S)
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    body = response.json()
    assert body == {"error": {"code": "rate_limited", "message": body["error"]["message"]}, "request_id": response.headers["x-request-id"]}
    assert body["error"]["message"]


def assert_not_logged(runtime, mark: int, *secrets: str) -> None:
    logged = "\n".join(runtime.own_lines(mark))
    for secret in secrets:
        assert secret not in logged


# --- over the limit --------------------------------------------------------------------

UI_TURN = {"messages": [{"id": "m0", "role": "user", "parts": [{"type": "text", "text": "Hello"}]}]}


@pytest.mark.parametrize(
    ("path", "route", "payload"),
    [
        pytest.param("/api/chat", "chat", {"messages": USER}, id="chat"),
        pytest.param("/api/chat/raw", "raw", {"messages": USER}, id="raw"),
        pytest.param("/api/ui-chat", "ui-chat", UI_TURN, id="ui-chat"),
    ],
)
async def test_a_client_gets_its_limit_then_a_429_with_retry_after_and_no_inference(start_runtime, http, path, route, payload):
    runtime = start_runtime(LIMITED)
    await in_one_window()
    address = fresh_address()
    headers = {"cf-connecting-ip": address, "origin": ORIGIN}
    mark = len(runtime.lines)
    for _ in range(LIMIT):
        allowed = await http.post(runtime.url + path, json=payload, headers=headers)
        assert allowed.status_code == 200 and allowed.content
    refused = await http.post(runtime.url + path, json=payload, headers=headers)
    assert_refused(refused)
    # A browser page must be able to read Retry-After for its countdown.
    assert refused.headers["access-control-allow-origin"] == ORIGIN
    assert "retry-after" in refused.headers["access-control-expose-headers"]
    request_id = refused.headers["x-request-id"]
    record = runtime.wait_for_record("chat_rate_limited", since=mark, request_id=request_id)
    assert record == {"event": "chat_rate_limited", "request_id": request_id, "route": route, "key": "ip"}

    # Another client's request after the refused one, told apart by its max_tokens: the
    # emulator logs calls in the order they come, so the call after the allowed ones is
    # that request's, unless the refused one reached the model.
    later = await http.post(runtime.url + path, json={**payload, "max_tokens": LATER_MAX_TOKENS}, headers={"cf-connecting-ip": fresh_address()})
    assert later.status_code == 200
    calls = runtime.wait_for_count("ai_run", LIMIT + 1, since=mark)
    assert [call["settings"]["max_tokens"] for call in calls[: LIMIT + 1]] == [DEFAULT_MAX_TOKENS] * LIMIT + [LATER_MAX_TOKENS], (
        "the refused request reached the model"
    )
    assert_not_logged(runtime, mark, address)


async def test_the_limit_is_checked_before_the_body_and_each_address_has_its_own_budget(start_runtime, http):
    runtime = start_runtime(LIMITED)
    await in_one_window()
    first, second = fresh_address(), fresh_address()
    for _ in range(LIMIT):
        assert (await spend(http, runtime.url, first)).status_code == 415
    too_big = await http.post(runtime.url + "/api/chat", content=b" " * (80 * 1024),
                              headers={"content-type": "application/json", "cf-connecting-ip": first})
    assert_refused(too_big)  # not 413: the body was never looked at
    assert_refused(await http.post(runtime.url + "/api/chat", json={"messages": USER}, headers={"cf-connecting-ip": first}))
    result = await chat(http, runtime.url, headers={"cf-connecting-ip": second})
    assert result.status == 200 and result.terminal.name == "done"
    assert result.text == USER[0]["content"]


async def test_ipv6_addresses_in_one_slash_64_share_a_budget(start_runtime, http):
    runtime = start_runtime(LIMITED)
    await in_one_window()
    site = f"2001:db8:{next(_addresses):x}"
    for host in range(1, LIMIT + 1):  # a new address each time, all in one /64
        assert (await spend(http, runtime.url, f"{site}:1::{host:x}")).status_code == 415
    assert_refused(await spend(http, runtime.url, f"{site}:1:ffff:ffff:ffff:ffff"))
    assert (await spend(http, runtime.url, f"{site}:2::1")).status_code == 415  # the next /64 has its own


async def test_health_preflights_the_page_404s_and_405s_are_never_limited_and_spend_nothing(start_runtime, http):
    runtime = start_runtime(LIMITED)
    await in_one_window()
    address = fresh_address()
    headers = {"cf-connecting-ip": address}
    preflight = {**headers, "origin": ORIGIN, "access-control-request-method": "POST"}

    async def everything_else_answers() -> None:
        for _ in range(LIMIT + 2):
            assert (await http.get(runtime.url + "/health", headers=headers)).status_code == 200
            assert (await http.options(runtime.url + "/api/chat", headers=preflight)).status_code == 204
            assert (await http.options(runtime.url + "/api/ui-chat", headers=preflight)).status_code == 204
            assert (await http.get(runtime.url + "/", headers=headers)).status_code == 200
            assert (await http.get(runtime.url + "/api/chat", headers=headers)).status_code == 405
            assert (await http.post(runtime.url + "/api/nope", json={}, headers=headers)).status_code == 404

    mark = len(runtime.lines)
    await everything_else_answers()  # spends nothing: the chat budget is still whole
    for _ in range(LIMIT):
        assert (await spend(http, runtime.url, address)).status_code == 415
    refused = await spend(http, runtime.url, address)
    assert_refused(refused)
    await everything_else_answers()  # and past the limit they still answer
    # A last refused request: the Worker logs in order, so once its record is printed, so
    # is any other request's; only these two were limited.
    last = await spend(http, runtime.url, address)
    assert_refused(last)
    runtime.wait_for_record("chat_rate_limited", since=mark, request_id=last.headers["x-request-id"])
    limited = [r["request_id"] for r in runtime.records(mark) if r["event"] == "chat_rate_limited"]
    assert limited == [refused.headers["x-request-id"], last.headers["x-request-id"]]


# --- what the key is -------------------------------------------------------------------


async def test_with_an_auth_token_the_token_is_the_key_and_only_valid_tokens_reach_the_limiter(start_runtime, http):
    runtime = start_runtime(scripted_options(ANSWER, rate_limit=LIMIT, variables={"AUTH_TOKEN": TOKEN}))
    await in_one_window()
    mark = len(runtime.lines)
    bearer = {"authorization": f"Bearer {TOKEN}"}
    addresses = [fresh_address() for _ in range(LIMIT + 1)]
    for address in addresses[:LIMIT]:  # a new address each time: the budget is the token's
        result = await chat(http, runtime.url, headers={**bearer, "cf-connecting-ip": address})
        assert result.status == 200 and result.terminal.name == "done"
    refused = await http.post(runtime.url + "/api/chat", json={"messages": USER}, headers={**bearer, "cf-connecting-ip": addresses[LIMIT]})
    assert_refused(refused)
    record = runtime.wait_for_record("chat_rate_limited", since=mark, request_id=refused.headers["x-request-id"])
    assert record["key"] == "token"
    # Auth comes first: a wrong or missing token is a 401 whatever the token's budget.
    wrong = await http.post(runtime.url + "/api/chat", json={"messages": USER}, headers={"authorization": "Bearer nope", "cf-connecting-ip": fresh_address()})
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"
    assert (await http.post(runtime.url + "/api/chat", json={"messages": USER})).status_code == 401
    assert_not_logged(runtime, mark, TOKEN, *addresses)


# --- configuration ---------------------------------------------------------------------


async def test_without_the_launcher_flag_the_limit_in_wrangler_toml_applies(start_runtime, http):
    [limiter] = tomllib.loads((ROOT / "wrangler.toml").read_text())["ratelimits"]
    runtime = start_runtime(RuntimeOptions(rate_limit=None))
    await in_one_window()
    address = fresh_address()
    for _ in range(limiter["simple"]["limit"]):
        assert (await spend(http, runtime.url, address)).status_code == 415
    assert_refused(await spend(http, runtime.url, address))


async def test_without_the_binding_every_request_is_served_and_logs_that_it_was_not_limited(start_runtime, http):
    runtime = start_runtime(scripted_options(ANSWER, rate_limit=0))
    mark = len(runtime.lines)
    address = fresh_address()
    served = []
    for _ in range(LIMIT + 2):
        result = await chat(http, runtime.url, headers={"cf-connecting-ip": address})
        assert result.status == 200 and result.terminal.name == "done"
        served.append(result.headers["x-request-id"])
    skipped = runtime.wait_for_count("chat_rate_limit_skipped", len(served), since=mark)
    assert sorted(r["request_id"] for r in skipped) == sorted(served)
    assert {(r["route"], r["key"], r["reason"]) for r in skipped} == {("chat", "ip", "binding_missing")}
    assert_not_logged(runtime, mark, address)


async def test_a_limiter_binding_that_fails_lets_requests_through_and_logs_the_error_type(start_runtime, http):
    # A RATE_LIMITER that is a plain string var: its `limit` call fails inside the Worker.
    runtime = start_runtime(scripted_options(ANSWER, rate_limit=0, variables={"RATE_LIMITER": "not-a-limiter"}))
    mark = len(runtime.lines)
    address = fresh_address()
    result = await chat(http, runtime.url, headers={"cf-connecting-ip": address})
    assert result.status == 200 and result.terminal.name == "done"
    record = runtime.wait_for_record("chat_rate_limit_skipped", since=mark, request_id=result.headers["x-request-id"])
    assert (record["reason"], record["detail"], record["key"]) == ("binding_failed", "AttributeError", "ip")
    assert_not_logged(runtime, mark, address)
