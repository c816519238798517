"""Which requests spend a client's rate-limit budget, under which key, and the refusal.

An open chat endpoint is free inference for whoever finds it, so each chat request spends
one unit of its client's budget in Workers' Rate Limiting binding before its body is read.
These decisions are plain Python, unit-tested on CPython; the one call across the FFI is
in `limiter`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chat.web.errors import ApiError

# The binding's name in wrangler.toml's [[ratelimits]].
BINDING = "RATE_LIMITER"

# wrangler.toml's `simple.period` for the binding (Workers allows 10 or 60 seconds). The
# binding does not tell the Worker its period, so it is repeated here and a unit test keeps
# the two equal. Retry-After sends the whole period: the binding does not say when a
# client's window ends, and no window is longer than the period.
PERIOD_S = 60

# The one budget of requests without a valid client address.
SHARED_KEY = "no-ip"

HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True, kw_only=True)
class ClientKey:
    """Whose budget a request spends. `kind` ("token" or "ip") is all a log may show."""

    kind: str
    value: str = field(repr=False)  # identifies the client: never logged


def client_key(*, token: str | None, ip: str | None) -> ClientKey:
    """The bearer token when the Worker requires one (only valid tokens get this far), else
    the client's address from CF-Connecting-IP."""
    if token is not None:
        import hashlib  # only Workers with a token pay for this (hmac imports it anyway)

        # The binding is a separate service: the secret itself never leaves the Worker.
        return ClientKey(kind="token", value="token:" + hashlib.sha256(token.encode()).hexdigest())
    address = (ip or "").strip().lower()
    if _is_ipv4(address):
        return ClientKey(kind="ip", value="ip:" + address)
    groups = ipv6_groups(address) if ":" in address else None
    if groups is not None:
        if groups[:6] == [0, 0, 0, 0, 0, 0xFFFF]:
            # An IPv4 client seen through an IPv6 socket ("::ffff:192.0.2.1", in any of
            # its spellings) is that IPv4 client, not one /64 that all of them would share.
            mapped = ".".join(str(octet) for group in groups[6:] for octet in divmod(group, 256))
            return ClientKey(kind="ip", value="ip:" + mapped)
        # One IPv6 subscriber holds a whole /64 and can use any address in it.
        return ClientKey(kind="ip", value="ip6:" + _prefix64(groups))
    # Cloudflare sets CF-Connecting-IP to the client's address on every request from the
    # Internet. A request without one came from inside the account (a service binding);
    # one with anything else was not sent as Cloudflare sends it. Either way they share
    # one budget: a made-up value must not buy a budget of its own.
    return ClientKey(kind="ip", value=SHARED_KEY)


def ipv6_prefix64(address: str) -> str | None:
    """The /64 network of an IPv6 address as "a:b:c:d::/64" (lower-case hex, no leading
    zeros), or None when `address` is not a plain IPv6 address."""
    groups = ipv6_groups(address)
    return None if groups is None else _prefix64(groups)


def _prefix64(groups: list[int]) -> str:
    return ":".join(format(group, "x") for group in groups[:4]) + "::/64"


def ipv6_groups(address: str) -> list[int] | None:
    """The eight 16-bit groups of an IPv6 address, or None when it is not one.

    Written out instead of importing `ipaddress`: a large pure-Python module, and the
    Worker keeps what Pyodide imports per isolate small (see `http`).
    """
    head, double_colon, tail = address.partition("::")
    if "::" in tail:
        return None
    left = head.split(":") if head else []
    right = tail.split(":") if tail else []
    # An embedded IPv4 address ("::ffff:192.0.2.1") may only end the address, in place of
    # the last two groups.
    last = right if double_colon else left
    embedded: list[int] = []
    if last and "." in last[-1]:
        dotted = last.pop()
        if not _is_ipv4(dotted):
            return None
        octets = [int(octet) for octet in dotted.split(".")]
        embedded = [octets[0] * 256 + octets[1], octets[2] * 256 + octets[3]]
    if not all(1 <= len(group) <= 4 and all(c in HEX_DIGITS for c in group) for group in left + right):
        return None
    width = len(left) + len(right) + len(embedded)
    if double_colon:
        if width > 7:
            return None
        middle = [0] * (8 - width)
    elif width != 8:
        return None
    else:
        middle = []
    return [int(group, 16) for group in left] + middle + [int(group, 16) for group in right] + embedded


def _is_ipv4(text: str) -> bool:
    octets = text.split(".")
    return len(octets) == 4 and all(_is_octet(octet) for octet in octets)


def _is_octet(text: str) -> bool:
    # No leading zeros: "010" reads as octal in some parsers and is refused by `ipaddress`.
    return 1 <= len(text) <= 3 and text.isascii() and text.isdigit() and int(text) <= 255 and (text == "0" or text[0] != "0")


def refusal() -> ApiError:
    """The 429 for a client over its limit; the same code as the model's own rate limit."""
    return ApiError("rate_limited", headers={"retry-after": str(PERIOD_S)})
