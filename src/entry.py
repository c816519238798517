"""The chat Worker: streams Workers AI chat completions, re-framed as they flow.

Routes and behaviour live in the `chat` package; the byte-level stream logic in `sse`.
"""

from workers import WorkerEntrypoint

from chat.handlers import handle


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        return await handle(request, self.env, self.ctx)
