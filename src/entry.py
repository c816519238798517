"""The chat Worker: streams Workers AI chat completions, re-framed as they flow.

Routes and behaviour live in the `chat` package; the byte-level stream logic in `sse`.
"""

from workers import WorkerEntrypoint

from chat.app.handlers import handle
from chat.conversation.durable_object import Conversation
from chat.platform.ffi import report_async_errors
from chat.resumable.durable_object import ChatStream

__all__ = ["ChatStream", "Conversation", "Default"]  # the Durable Object classes are exported from the main module

report_async_errors()  # once per isolate: the Worker's and its Durable Objects'


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        return await handle(request, self.env, self.ctx)
