"""The chat Worker's own logic. Pure modules (config, validation, api_errors, http,
exchange, routes, rate_limit, lifecycle, openai_api) run on CPython in unit tests; only
`edge` (the request, the response, waitUntil), `upstream`, `limiter`, `relay` and
`collect` touch the JS runtime, and `handlers` joins them."""
