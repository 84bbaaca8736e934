"""Prompt templates as files: ``prompts/<lang>/<name>.txt``. The loader returns text + sha256.

Templates use ``str.format`` fields (``{title}``, ``{text}`` …). An ablation swaps a prompt by pointing the
config at another file: a path relative to ``RunConfig.prompts_dir`` (searched first) or to this folder,
an absolute path, or ``package:relative/path`` — a file inside an importable package (how a plug-in names the
prompt files it ships, e.g. ``rwb_lead:prompts/lead.txt``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PACKAGE_PROMPTS = Path(__file__).parent


def placeholders(text: str) -> set[str]:
    """The ``str.format`` fields a template uses (``{title}``, ``{a.b}`` -> ``a``); ValueError if it is not
    one."""
    return {
        name.split(".")[0].split("[")[0]
        for _, name, _, _ in string.Formatter().parse(text)
        if name is not None
    }


def package_file(name: str) -> Path:
    """``package:relative/path`` -> the file inside the importable package (FileNotFoundError when
    missing)."""
    package, _, relative = name.partition(":")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError) as exc:
        raise FileNotFoundError(f"prompt file {name!r}: cannot import {package!r}: {exc}") from None
    if spec is None or spec.origin is None and not spec.submodule_search_locations:
        raise FileNotFoundError(f"prompt file {name!r}: no importable package {package!r}")
    locations = list(spec.submodule_search_locations or [])
    base = Path(locations[0]) if locations else Path(str(spec.origin)).parent
    if not (base / relative).is_file():
        raise FileNotFoundError(f"prompt file {name!r} not found: no {relative} in {base}")
    return base / relative


@dataclass(frozen=True)
class Prompt:
    name: str
    path: Path
    text: str
    sha256: str

    def format(self, **fields: object) -> str:
        try:
            return self.text.format(**fields)
        except KeyError as exc:
            raise KeyError(f"prompt {self.path}: no value for field {exc}") from exc


class PromptLibrary:
    """Loads prompt files once and remembers every hash it served (for the run log).

    ``listeners`` are called with every prompt served (each ``get``), e.g. by the node capture, which records
    which prompt files a node used.
    """

    def __init__(self, extra_dir: str | Path | None = None) -> None:
        self.search = [Path(extra_dir)] if extra_dir else []
        self.search.append(PACKAGE_PROMPTS)
        self._loaded: dict[str, Prompt] = {}
        self.listeners: list[Callable[[Prompt], None]] = []

    def resolve(self, name: str) -> Path:
        candidate = Path(name)
        if not candidate.is_absolute() and ":" in name:
            return package_file(name)
        if candidate.is_absolute():
            if candidate.exists():
                return candidate
        else:
            for base in self.search:
                if (base / name).exists():
                    return base / name
        raise FileNotFoundError(f"prompt file {name!r} not found in {[str(p) for p in self.search]}")

    def get(self, name: str) -> Prompt:
        if name not in self._loaded:
            path = self.resolve(name)
            text = path.read_text(encoding="utf-8")
            self._loaded[name] = Prompt(name, path, text, hashlib.sha256(text.encode()).hexdigest())
        prompt = self._loaded[name]
        for listener in self.listeners:
            listener(prompt)
        return prompt

    def fragment(self, name: str, **fields: object) -> str:
        """A short piece of prompt text kept as a file too (``ru/fragment_<name>.txt``: a placeholder, a
        label); a file of the same name in ``prompts_dir`` replaces it."""
        return self.get(f"ru/fragment_{name}.txt").format(**fields)

    def hashes(self) -> dict[str, str]:
        """name -> sha256 of every prompt served so far."""
        return {name: p.sha256 for name, p in sorted(self._loaded.items())}
