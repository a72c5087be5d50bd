"""The model and context window a nanobot data directory's `config.json` names, as nanobot resolves them.

nanobot 0.3.5 (`nanobot/config/schema.py`): `agents.defaults.modelPreset`, when set (and not
"default"), names an entry of `modelPresets` whose `model` and `contextWindowTokens` it runs with;
otherwise `agents.defaults.model` and `agents.defaults.contextWindowTokens`. Every key is read in
camelCase or snake_case (pydantic's `to_camel` aliases with `populate_by_name`); a missing one
takes nanobot's default. A config nanobot would refuse (a wrong type, an unknown preset) names
nothing here either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import documents, paths
from .documents import DocumentUnreadable

NAME = "config.json"
LIMIT = 4 * 1024 * 1024
DEFAULT_MODEL = "anthropic/claude-opus-4-5"
DEFAULT_WINDOW = 200_000


@dataclass(frozen=True, slots=True)
class ModelConfig:
    model: str = ""
    window: int | None = None


def read(root: Path) -> ModelConfig:
    """What the data directory's config names; nothing for a missing, refused or unusable file."""
    path = root / NAME
    if paths.refusal(root, path):
        return ModelConfig()
    try:
        config = documents.parse(documents.read_bytes(path, LIMIT))
    except (OSError, DocumentUnreadable):
        return ModelConfig()
    return resolve(config)


def resolve(config: object) -> ModelConfig:
    if not isinstance(config, dict):
        return ModelConfig()
    defaults = _get(_get(config, "agents"), "defaults")
    if defaults is None:
        defaults = {}
    if not isinstance(defaults, dict):
        return ModelConfig()
    chosen = _get(defaults, "model_preset")
    if chosen not in (None, "default"):
        presets = _get(config, "model_presets") or {}
        chosen = presets.get(chosen) if isinstance(presets, dict) and isinstance(chosen, str) else None
        if not isinstance(chosen, dict) or not isinstance(_get(chosen, "model"), str):
            return ModelConfig()  # nanobot refuses to start with it
        defaults = chosen
    model = _get(defaults, "model")
    window = _get(defaults, "context_window_tokens")
    model = DEFAULT_MODEL if model is None else model
    window = DEFAULT_WINDOW if window is None else window
    if not isinstance(model, str) or type(window) is not int or window <= 0:
        return ModelConfig()
    return ModelConfig(model.strip(), window)


def _get(section: object, name: str) -> object:
    """A key as nanobot's pydantic models take it: its camelCase alias first, else its own name."""
    if not isinstance(section, dict):
        return None
    head, *rest = name.split("_")
    camel = head + "".join(part.title() for part in rest)
    return section[camel] if camel in section else section.get(name)
