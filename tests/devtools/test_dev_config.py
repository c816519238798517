"""The launcher's local configuration, derived from wrangler.toml (devtools/dev.py)."""

from __future__ import annotations

import copy
import tomllib

import pytest

from devtools.dev import ROOT, local_worker_config, parse_args

PRODUCTION = tomllib.loads((ROOT / "wrangler.toml").read_text())


def test_without_rate_limit_the_wrangler_toml_limiter_is_used_as_it_is():
    assert local_worker_config(PRODUCTION)["ratelimits"] == PRODUCTION["ratelimits"]


def test_rate_limit_replaces_only_the_limit_and_leaves_the_production_config_alone():
    before = copy.deepcopy(PRODUCTION)
    [limiter] = local_worker_config(PRODUCTION, rate_limit=5)["ratelimits"]
    [production] = PRODUCTION["ratelimits"]
    assert limiter == {**production, "simple": {**production["simple"], "limit": 5}}
    assert PRODUCTION == before


def test_rate_limit_zero_leaves_the_worker_without_a_limiter_binding():
    assert "ratelimits" not in local_worker_config(PRODUCTION, rate_limit=0)


def test_rate_limit_without_a_limiter_in_wrangler_toml_is_refused():
    production = {key: value for key, value in PRODUCTION.items() if key != "ratelimits"}
    with pytest.raises(SystemExit, match="no \\[\\[ratelimits\\]\\]"):
        local_worker_config(production, rate_limit=5)


def test_the_launcher_takes_a_rate_limit_of_zero_or_more():
    assert parse_args([]).rate_limit is None
    assert parse_args(["--rate-limit", "5"]).rate_limit == 5
    with pytest.raises(SystemExit):
        parse_args(["--rate-limit", "-1"])


def test_another_main_module_is_served_without_the_workers_durable_objects():
    own = local_worker_config(PRODUCTION)
    assert own["durable_objects"] == PRODUCTION["durable_objects"] and own["migrations"] == PRODUCTION["migrations"]
    anchor = local_worker_config(PRODUCTION, "bench/js_reframer/worker.js")
    assert "durable_objects" not in anchor and "migrations" not in anchor
    assert anchor["main"].endswith("bench/js_reframer/worker.js")
