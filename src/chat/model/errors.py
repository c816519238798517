"""What a failed call of the AI binding means: the Workers AI error code at the start of
its message (read by sse's binding_error_code), and which codes say "try later" or "not
for this account". Pure Python."""

from __future__ import annotations

from sse import RATE_LIMIT_CODES, binding_error_code

__all__ = ["MODEL_REFUSED_CODES", "RATE_LIMIT_CODES", "binding_error_code"]

# The codes that say the model is not there for this account: our code for each.
MODEL_REFUSED_CODES = {5007: "model_misconfigured", 5035: "model_requires_paid_plan"}
