"""What each API surface accepts: the request checks of /api/chat and /api/ui-chat
(validation), of the OpenAI-compatible /v1 (openai) and of tool definitions and tool
messages (tools). Pure Python: every rule runs on CPython in unit tests, and a request is
refused here before any inference."""
