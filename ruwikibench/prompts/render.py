"""Putting texts into prompts: one way to cut a text at a word boundary, one way to number texts.

Every prompt that shows snippets, descriptions, sources or answers goes through these two functions; what
differs between callers (how far back a word boundary may lie, the cut marker, whether whitespace is
squashed) is an argument, not a copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ELLIPSIS = " …"


def cut_text(
    text: str, chars: int | None, *, keep: float = 0.6, marker: str = ELLIPSIS, squash: bool = True
) -> str:
    """``text`` cut to at most ``chars`` characters plus ``marker``.

    The cut goes back to the last space when that space lies beyond ``keep`` × ``chars`` (``keep=0``: any
    space), else it falls mid-word. ``squash`` first joins all whitespace runs into single spaces (snippets);
    without it line breaks are kept (a body of headings and paragraphs). ``chars=None`` never cuts."""
    if squash:
        text = " ".join(text.split())
    if chars is None or len(text) <= chars:
        return text
    cut = text[:chars]
    space = cut.rfind(" ")
    if space > keep * chars:
        cut = cut[:space]
    return cut.rstrip() + marker


def numbered_texts(
    texts: Sequence[str], chars: int | None = None, *, numbers: Sequence[int] | None = None, **cut: Any
) -> str:
    """Texts as ``[n] text`` blocks separated by blank lines, each cut by :func:`cut_text` (``cut`` passes its
    options); numbered from 1 unless ``numbers`` are given."""
    labels = numbers if numbers is not None else range(1, len(texts) + 1)
    return "\n\n".join(f"[{n}] {cut_text(text, chars, **cut)}" for n, text in zip(labels, texts, strict=True))
