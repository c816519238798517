"""The chat Worker's own logic. Pure modules (config, validation, api_errors, http) run on
CPython in unit tests; only `upstream` and `relay` touch the JS runtime."""
