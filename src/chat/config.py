"""Worker configuration from [vars] and secrets, checked once per request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chat.model import catalog
from chat.stream.lifecycle import Timeouts
from sse import DEFAULT_MAX_PADDING, MAX_PADDING

# A request is sized to the context window of the model that answers it (docs/protocol.md,
# "Limits"): ceilings that anything fitting the window stays under, not a tokenizer. A
# token is about 4 characters of English and 1 to 2 of CJK text; as JSON, with escapes
# and UTF-8, no text runs to 8 bytes a token, nor to 6 characters (a run of spaces in
# code is the longest common token). Each message costs the chat template's role markers
# besides its text: 32 tokens a message is far more than any template spends.
BODY_BYTES_PER_TOKEN = 8
INPUT_CHARS_PER_TOKEN = 6
TOKENS_PER_MESSAGE = 32
UNSTATED_CONTEXT_WINDOW = 8_192  # a model whose page states none, or one the catalog does not list


def context_window(model: str) -> int:
    """The model's context window in tokens, by the catalog."""
    entry = catalog.lookup(model)
    window = entry.context_window if isinstance(entry, catalog.Model) else None
    return window or UNSTATED_CONTEXT_WINDOW


class ConfigError(ValueError):
    """A [vars] entry or secret has a value the Worker cannot run with."""


@dataclass(frozen=True, kw_only=True)
class Config:
    model: str
    fallback_models: tuple[str, ...] = ()
    system_prompt: str = ""
    # MAX_TOKENS, MAX_BODY_BYTES, MAX_MESSAGES and MAX_INPUT_CHARS are upper bounds; under
    # them, a request's are its model's context window's (the methods below).
    max_tokens: int = 4096
    max_body_bytes: int = 2 * 1024 * 1024
    max_messages: int = 1000
    max_input_chars: int = 1_000_000
    start_timeout_ms: int = 15_000
    idle_timeout_ms: int = 30_000
    ping_interval_ms: int = 15_000
    client_timeout_ms: int = 60_000
    allowed_origins: tuple[str, ...] = ()  # empty: any origin
    padding: int = DEFAULT_MAX_PADDING  # longest random padding on delta events; 0 turns it off
    auth_token: str | None = None
    retry_after_s: int = 10
    # OPENAI_SYSTEM_MESSAGES: "accept" (a client's system messages on /v1/chat/completions
    # follow SYSTEM_PROMPT) or "refuse" (a 400, as on /api/chat).
    openai_system_messages: bool = True
    resume_grace_ms: int = 60_000  # a resumable answer nobody reads for this long is stopped
    resume_ttl_s: int = 600  # a finished resumable answer can be read again for this long
    conversation_ttl_s: int = 30 * 24 * 3600  # a conversation of /v1/conversations is kept this long after its last change
    response_ttl_s: int = 30 * 24 * 3600  # a stored response (its Response, input and items) is kept this long after it ended
    ai_gateway_id: str | None = None  # AI_GATEWAY_ID: every model call goes through this gateway
    vision_model: str | None = None  # VISION_MODEL: what answers a turn with images when no model is named
    # OPENAI_API_PUBLIC: without AUTH_TOKEN, /v1's chat routes serve anyone only when this is
    # "true" (the local launchers set it); a deployed Worker fails closed (Route.public_var).
    openai_api_public: bool = False

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(
            ping_interval=self.ping_interval_ms / 1000,
            idle=self.idle_timeout_ms / 1000,
            client=self.client_timeout_ms / 1000,
        )

    @property
    def models(self) -> tuple[str, ...]:
        # Once each: a model listed twice would be tried twice when it fails.
        return tuple(dict.fromkeys((self.model, *self.fallback_models)))

    @property
    def vision_models(self) -> tuple[str, ...]:
        """The models to try for a turn with images that names none: VISION_MODEL, then
        MODEL and FALLBACK_MODELS (the request's checks leave out those without vision)."""
        return tuple(dict.fromkeys((*((self.vision_model,) if self.vision_model else ()), *self.models)))

    @property
    def served_models(self) -> tuple[str, ...]:
        """Every model a client may name (GET /v1/models lists them): `models`, then VISION_MODEL."""
        return tuple(dict.fromkeys((*self.models, *((self.vision_model,) if self.vision_model else ()))))

    @property
    def body_limit(self) -> int:
        """The bytes a request body may have besides its images, read before its model is
        known: the largest of any model served here, under MAX_BODY_BYTES."""
        return min(self.max_body_bytes, max(context_window(model) * BODY_BYTES_PER_TOKEN for model in self.served_models))

    def input_chars_for(self, model: str) -> int:
        """The characters of text (messages, tool results, call arguments) `model` is sent at most."""
        return min(self.max_input_chars, context_window(model) * INPUT_CHARS_PER_TOKEN)

    def messages_for(self, model: str) -> int:
        """The messages `model` is sent at most."""
        return min(self.max_messages, max(1, context_window(model) // TOKENS_PER_MESSAGE))

    @classmethod
    def from_env(cls, read: Callable[[str], str | None]) -> Config:
        """Build from a lookup of variable names; raises ConfigError naming the bad entry."""

        def text(name: str, default: str) -> str:
            value = read(name)
            return default if value is None else str(value)

        def integer(name: str, default: int, minimum: int) -> int:
            raw = read(name)
            if raw is None or str(raw).strip() == "":
                return default
            try:
                value = int(str(raw).strip())
            except ValueError:
                raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
            if value < minimum:
                raise ConfigError(f"{name} must be at least {minimum}, got {value}")
            return value

        def names(name: str) -> tuple[str, ...]:
            return tuple(part.strip() for part in text(name, "").split(",") if part.strip())

        def choice(name: str, options: dict[str, bool], default: str) -> bool:
            value = text(name, default).strip().lower() or default
            if value not in options:
                raise ConfigError(f"{name} must be one of {', '.join(options)}, got {value[:40]!r}")
            return options[value]

        model = text("MODEL", "").strip()
        if not model:
            raise ConfigError("MODEL must name a Workers AI model")
        config = cls(
            model=model,
            fallback_models=names("FALLBACK_MODELS"),
            system_prompt=text("SYSTEM_PROMPT", ""),
            max_tokens=integer("MAX_TOKENS", cls.max_tokens, 1),
            max_body_bytes=integer("MAX_BODY_BYTES", cls.max_body_bytes, 1),
            max_messages=integer("MAX_MESSAGES", cls.max_messages, 1),
            max_input_chars=integer("MAX_INPUT_CHARS", cls.max_input_chars, 1),
            start_timeout_ms=integer("START_TIMEOUT_MS", cls.start_timeout_ms, 1),
            idle_timeout_ms=integer("IDLE_TIMEOUT_MS", cls.idle_timeout_ms, 1),
            ping_interval_ms=integer("PING_INTERVAL_MS", cls.ping_interval_ms, 1),
            client_timeout_ms=integer("CLIENT_TIMEOUT_MS", cls.client_timeout_ms, 1),
            allowed_origins=names("ALLOWED_ORIGINS"),
            padding=integer("PADDING", cls.padding, 0),
            auth_token=read("AUTH_TOKEN") or None,
            openai_system_messages=choice("OPENAI_SYSTEM_MESSAGES", {"accept": True, "refuse": False}, "accept"),
            resume_grace_ms=integer("RESUME_GRACE_MS", cls.resume_grace_ms, 1),
            resume_ttl_s=integer("RESUME_TTL_S", cls.resume_ttl_s, 1),
            conversation_ttl_s=integer("CONVERSATION_TTL_S", cls.conversation_ttl_s, 1),
            response_ttl_s=integer("RESPONSE_TTL_S", cls.response_ttl_s, 1),
            ai_gateway_id=text("AI_GATEWAY_ID", "").strip() or None,
            vision_model=text("VISION_MODEL", "").strip() or None,
            openai_api_public=choice("OPENAI_API_PUBLIC", {"false": False, "true": True}, "false"),
        )
        if config.padding > MAX_PADDING:
            raise ConfigError(f"PADDING must be at most {MAX_PADDING}, got {config.padding}")
        allow_unlisted = choice("ALLOW_UNLISTED_MODELS", {"false": False, "true": True}, "false")
        check_models(config.models, allow_unlisted=allow_unlisted)
        if config.vision_model is not None:
            check_models((config.vision_model,), allow_unlisted=allow_unlisted, setting="VISION_MODEL")
            if not catalog.can(config.vision_model, "vision"):
                raise ConfigError(f"VISION_MODEL: {config.vision_model} does not take images, by the model catalog "
                                  "(src/chat/model/catalog.py)")
        return config


def check_models(models: tuple[str, ...], *, allow_unlisted: bool, setting: str | None = None) -> None:
    """Raises ConfigError for a model the catalog marks retired (Workers AI answers 5007,
    or another model at another price), and for one it does not list unless
    ALLOW_UNLISTED_MODELS is true (the catalog grows faster than it is updated)."""
    for position, model_id in enumerate(models):
        name = setting or ("MODEL" if position == 0 else "FALLBACK_MODELS")
        entry = catalog.lookup(model_id)
        if isinstance(entry, catalog.Retired):
            instead = f"; Workers AI now answers it with {entry.aliased_to}" if entry.aliased_to else ""
            raise ConfigError(f"{name}: {model_id} was retired by Workers AI on {entry.retired}{instead} (src/chat/model/catalog.py lists current models)")
        if entry is None and not allow_unlisted:
            raise ConfigError(f"{name}: {model_id[:100]} is not in the model catalog (src/chat/model/catalog.py); "
                              "set ALLOW_UNLISTED_MODELS to true to use it anyway")
