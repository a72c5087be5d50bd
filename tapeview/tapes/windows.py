"""Context windows of known models, overridable with settings.TAPEVIEW_MODEL_WINDOWS."""

from __future__ import annotations

from django.conf import settings

# Input context windows in tokens, by the model's name less its provider ("openai:", "anthropic/"),
# matched by the longest known prefix. Published by the vendors; override or add in settings.
KNOWN: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1-mini": 128_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2": 1_048_576,
    "deepseek": 128_000,
    "kimi-k2": 131_072,
    "glm-4.5": 131_072,
    "qwen3-coder": 262_144,
    "qwen3": 131_072,
}


def short_name(model: str) -> str:
    """`openai:gpt-4.1-mini` and `openrouter/openai/gpt-4.1-mini` as `gpt-4.1-mini`."""
    return model.strip().lower().rsplit(":", 1)[-1].rsplit("/", 1)[-1]


def window(model: str) -> int | None:
    """The model's context window in tokens, or None when neither the settings nor the table know it."""
    if not model:
        return None
    overrides = {k.lower(): v for k, v in settings.TAPEVIEW_MODEL_WINDOWS.items()}
    for name in (model.strip().lower(), short_name(model)):
        if name in overrides:
            return overrides[name]
    name = short_name(model)
    for table in (overrides, KNOWN):
        prefixes = [p for p in table if name.startswith(p)]
        if prefixes:
            return table[max(prefixes, key=len)]
    return None


def encoding(model: str) -> str:
    """The BPE encoding the estimate counts with: OpenAI's own for its models, o200k for the rest.

    Other vendors' tokenizers are not published as BPE tables; o200k is the estimate there.
    """
    name = short_name(model)
    old = name.startswith(("gpt-4", "gpt-3.5")) and not name.startswith(("gpt-4o", "gpt-4.1"))
    return "cl100k_base" if old else "o200k_base"
