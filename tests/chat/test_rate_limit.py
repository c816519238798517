"""The rate limit's pure decisions on CPython: which requests spend budget, under which key."""

from __future__ import annotations

import ipaddress
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat.ratelimit.keys import BINDING, PERIOD_S, client_key, ipv6_prefix64, refusal
from chat.web.routes import match

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("path", "spends"),
    [
        pytest.param("/api/chat", True, id="chat"),
        pytest.param("/api/chat/raw", True, id="raw"),
        pytest.param("/api/ui-chat", True, id="ui-chat"),
        pytest.param("/v1/chat/completions", True, id="openai-chat"),
        pytest.param("/v1/models", False, id="openai-models"),
        pytest.param("/health", False, id="health"),
        pytest.param("/api/chat/streams/" + "a" * 64, False, id="resumable-reader"),
        pytest.param("/api/ui-chat/c1/stream", False, id="ui-chat-reader"),
        # They write storage: a POST spends, a GET of their items does not (chat.app.handlers).
        pytest.param("/v1/conversations", True, id="conversations"),
        pytest.param("/v1/conversations/c1/items", True, id="conversation-items"),
        pytest.param("/v1/conversations/c1", False, id="conversation"),
        pytest.param("/v1/responses/r1/input_items", False, id="input-items"),
    ],
)
def test_only_the_routes_that_start_inference_spend_budget_and_only_by_post(path, spends):
    found = match(path)
    assert found is not None and found.route.spends_budget is spends
    if spends:
        assert "POST" in found.route.methods and set(found.route.methods) <= {"GET", "POST"}, \
            "preflights, 404s and 405s never spend budget; only a POST does"


def test_the_period_and_binding_name_match_wrangler_toml():
    limiters = tomllib.loads((ROOT / "wrangler.toml").read_text())["ratelimits"]
    assert [limiter["name"] for limiter in limiters] == [BINDING]
    assert limiters[0]["simple"]["period"] == PERIOD_S
    assert PERIOD_S in (10, 60), "the only periods Workers' Rate Limiting binding accepts"


def test_a_refusal_is_a_429_with_retry_after_the_period():
    error = refusal()
    assert (error.status, error.code) == (429, "rate_limited")
    assert error.headers == {"retry-after": str(PERIOD_S)}


def test_the_token_is_the_key_when_there_is_one_and_it_is_never_sent_in_clear():
    key = client_key(token="s3cret-token", ip="203.0.113.7")
    assert key.kind == "token"
    assert "s3cret-token" not in key.value and "203.0.113.7" not in key.value
    assert key == client_key(token="s3cret-token", ip="198.51.100.1"), "the address does not matter"
    assert key != client_key(token="other-token", ip="203.0.113.7")
    assert "s3cret" not in repr(key)


def test_without_a_token_each_address_has_its_own_key_and_repr_hides_it():
    key = client_key(token=None, ip="203.0.113.7")
    assert key.kind == "ip"
    assert key != client_key(token=None, ip="203.0.113.8")
    assert key == client_key(token=None, ip=" 203.0.113.7 ")
    assert "203.0.113" not in repr(key)


@pytest.mark.parametrize("address", [None, "", "  ", "unknown", "junk1", "junk2", "2001:db8:1:2:", "1.2.3", "1.2.3.256",
                                     "01.2.3.4", "::ffff:junk", "1::2::3", "203.0.113.7, 198.51.100.1"])
def test_requests_without_a_valid_address_share_one_budget(address):
    # A made-up CF-Connecting-IP must not buy a budget of its own.
    assert client_key(token=None, ip=address) == client_key(token=None, ip=None)
    assert client_key(token=None, ip=address) != client_key(token=None, ip="203.0.113.7")


def test_ipv6_addresses_in_one_slash_64_share_a_budget():
    first = client_key(token=None, ip="2001:db8:1:2::1")
    assert first == client_key(token=None, ip="2001:0DB8:0001:0002:ffff:1:2:3")
    assert first != client_key(token=None, ip="2001:db8:1:3::1")
    assert first != client_key(token=None, ip="2001:db8:1:2:")  # malformed: the shared budget


@pytest.mark.parametrize("spelling", ["::ffff:192.0.2.1", "::FFFF:192.0.2.1", "0:0:0:0:0:ffff:192.0.2.1", "::ffff:c000:201",
                                      "0000:0000:0000:0000:0000:ffff:c000:0201"])
def test_ipv4_clients_seen_through_ipv6_keep_their_own_budgets_in_every_spelling(spelling):
    first = client_key(token=None, ip=spelling)
    assert first == client_key(token=None, ip="192.0.2.1")
    assert first != client_key(token=None, ip="::ffff:192.0.2.2")


@pytest.mark.parametrize(
    ("address", "prefix"),
    [
        pytest.param("::", "0:0:0:0::/64", id="unspecified"),
        pytest.param("::1", "0:0:0:0::/64", id="loopback"),
        pytest.param("2001:db8::", "2001:db8:0:0::/64", id="trailing-double-colon"),
        pytest.param("1:2:3:4:5:6:7::", "1:2:3:4::/64", id="double-colon-for-one-group"),
        pytest.param("2001:DB8:00aa:0::9", "2001:db8:aa:0::/64", id="case-and-leading-zeros"),
        pytest.param("::ffff:192.0.2.1", "0:0:0:0::/64", id="ipv4-mapped"),
        pytest.param("1:2:3:4:5:6:192.0.2.1", "1:2:3:4::/64", id="ipv4-suffix-full"),
        pytest.param("1:2:3:4:5:6:7:8:9", None, id="nine-groups"),
        pytest.param("1:2:3:4:5:6:7", None, id="seven-groups"),
        pytest.param("1::2::3", None, id="two-double-colons"),
        pytest.param("12345::", None, id="group-too-long"),
        pytest.param("192.0.2.1::", None, id="ipv4-not-last"),
        pytest.param("::192.0.2.01", None, id="ipv4-leading-zero"),
        pytest.param("::256.0.0.1", None, id="ipv4-octet-over"),
        pytest.param("g::1", None, id="not-hex"),
        pytest.param(":1::", None, id="single-leading-colon"),
    ],
)
def test_ipv6_prefixes(address, prefix):
    assert ipv6_prefix64(address) == prefix


def ipv6_spellings(number: int) -> list[str]:
    address = ipaddress.IPv6Address(number)
    groups = address.exploded.split(":")
    embedded = ":".join(groups[:6]) + ":" + str(ipaddress.IPv4Address(number & 0xFFFFFFFF))
    return [address.compressed, address.exploded, address.compressed.upper(), embedded]


@given(st.integers(min_value=0, max_value=2**128 - 1) | st.sampled_from([0, 1, 2**64, 2**128 - 1, 0xFFFF << 32]))
def test_ipv6_prefixes_agree_with_ipaddress_for_every_spelling(number):
    expected = ipaddress.IPv6Network((number, 64), strict=False)
    for spelling in ipv6_spellings(number):
        prefix = ipv6_prefix64(spelling)
        assert prefix is not None, spelling
        assert ipaddress.IPv6Network(prefix) == expected, spelling


@given(st.text(alphabet="0123456789abcdefABCDEF:.", max_size=45))
def test_ipv6_prefix_is_found_exactly_when_ipaddress_accepts_the_text(text):
    try:
        expected = ipaddress.IPv6Network((ipaddress.IPv6Address(text), 64), strict=False)
    except ValueError:
        expected = None
    prefix = ipv6_prefix64(text)
    assert (prefix is None) == (expected is None), text
    if prefix is not None:
        assert ipaddress.IPv6Network(prefix) == expected

