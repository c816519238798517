"""Hypothesis profiles for the SSE core's tests.

`ci` (the default) keeps the whole tests/sse run well under a minute on two cores;
`fuzz` runs the same properties at high example counts: HYPOTHESIS_PROFILE=fuzz.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, deadline=None)
settings.register_profile(
    "fuzz",
    max_examples=5_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
