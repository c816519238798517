"""The CLI's defaults, bounds and exit statuses (docs/cli.md)."""

from __future__ import annotations

DEFAULT_URL = "http://127.0.0.1:8787"
# OpenAI's reasoning_effort values; "low" by default: a thinking model spends its reasoning
# from the answer's token budget, and short thinking leaves room for the answer.
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
DEFAULT_REASONING_EFFORT = "low"
MAX_LINE_CHARS = 1024 * 1024
MAX_ERROR_BODY = 64 * 1024

EXIT_COMPLETE, EXIT_USAGE, EXIT_CANCELLED, EXIT_STREAM_ERROR = 0, 2, 3, 4
EXIT_NOT_WHOLE = 5  # the answer ended, but not as a whole answer: cut short, or for a reason not known
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
RESUME_ATTEMPTS = 5  # reconnections in a row without a new event before giving up
RESUME_BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 4.0)
