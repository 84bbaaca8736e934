"""Source text -> fixed-size word windows (snippets) that keep the text's line and paragraph breaks."""

from __future__ import annotations

import re

from ruwikibench.dataset import Snippet, Source, snippet_id

DEFAULT_WINDOW = 600
DEFAULT_OVERLAP = 0
_WORD = re.compile(r"\S+")


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the whitespace-separated words of ``text``."""
    return [m.span() for m in _WORD.finditer(text)]


def window_starts(n_words: int, window: int, overlap: int) -> list[int]:
    """Start word indices of the windows; the last window ends at the last word, none lies inside another."""
    if window < 1:
        raise ValueError(f"snippet window must be >= 1 word, got {window}")
    if not 0 <= overlap < window:
        raise ValueError(f"snippet overlap must be in [0, window), got {overlap} for window {window}")
    step = window - overlap
    starts = [0] if n_words else []
    while starts and starts[-1] + window < n_words:
        starts.append(starts[-1] + step)
    return starts


def make_snippets(
    source: Source, window: int = DEFAULT_WINDOW, overlap: int = DEFAULT_OVERLAP
) -> list[Snippet]:
    """Split a source into windows of ``window`` words (``overlap`` words shared by neighbours).

    A snippet's text is the slice of the source text from its first to its last word, so newlines and blank
    lines between paragraphs survive (``\r\n``/``\r`` become ``\n``); ``word_start``/``word_end`` are word
    indices into the source's whitespace-split words (end exclusive).
    """
    spans = word_spans(source.text)
    snippets = []
    for index, start in enumerate(window_starts(len(spans), window, overlap)):
        end = min(start + window, len(spans))
        snippets.append(
            Snippet(
                id=snippet_id(source.id, index),
                article=source.article,
                source_id=source.id,
                index=index,
                text=normalize_newlines(source.text[spans[start][0] : spans[end - 1][1]]),
                word_start=start,
                word_end=end,
            )
        )
    return snippets
