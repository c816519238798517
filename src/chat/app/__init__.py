"""The Worker's fetch: `handle` admits a request (chat.web.routes), spends its rate-limit
budget (chat.ratelimit), and dispatches it to its route's handler (handlers), which joins
the checks, the model call and the stream. The one place where all the packages meet."""

from chat.app.handlers import handle

__all__ = ["handle"]
