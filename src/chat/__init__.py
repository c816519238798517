"""The chat Worker's own logic. Pure modules (catalog, config, validation, model_call,
api_errors, http, exchange, routes, rate_limit, lifecycle, openai_api) run on CPython in
unit tests; only `edge` (the request, the response, waitUntil), `upstream`, `limiter`,
`relay`, `collect`, `resumable` and `stream_object` touch the JS runtime, and `handlers`
joins them."""
