from __future__ import annotations

import pytest

from ruwikibench.corpus_builder.snippets import make_snippets, window_starts
from ruwikibench.dataset import Source


def source(text: str) -> Source:
    return Source(id="Art/source_1", article="Art", footnote_id="cite_note-1", text=text)


def test_window_starts_hand_computed() -> None:
    assert window_starts(0, 600, 0) == []
    assert window_starts(600, 600, 0) == [0]
    assert window_starts(601, 600, 0) == [0, 600]
    assert window_starts(1500, 600, 0) == [0, 600, 1200]
    assert window_starts(10, 4, 2) == [
        0,
        2,
        4,
        6,
    ]  # last window 6..10 reaches the end; no window inside another
    assert window_starts(3, 4, 2) == [0]


@pytest.mark.parametrize(("window", "overlap"), [(0, 0), (4, 4), (4, -1)])
def test_bad_window_parameters_raise(window: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        window_starts(10, window, overlap)


def test_snippets_cover_every_word_once_without_overlap() -> None:
    words = [f"w{i}" for i in range(1301)]
    snippets = make_snippets(source(" ".join(words)))
    assert [(s.word_start, s.word_end) for s in snippets] == [(0, 600), (600, 1200), (1200, 1301)]
    assert [s.id for s in snippets] == ["Art/source_1#0", "Art/source_1#1", "Art/source_1#2"]
    assert [w for s in snippets for w in s.text.split()] == words
    assert all(s.article == "Art" and s.source_id == "Art/source_1" for s in snippets)


def test_snippet_text_keeps_line_and_paragraph_breaks() -> None:
    text = "Заголовок\r\n\r\nПервый абзац текста.\nВторая строка.\n\n\nТретий  абзац."
    (snippet,) = make_snippets(source(text), window=50)
    assert snippet.text == "Заголовок\n\nПервый абзац текста.\nВторая строка.\n\n\nТретий  абзац."
    first, second = make_snippets(source(text), window=4)
    assert first.text == "Заголовок\n\nПервый абзац текста."
    assert second.text == "Вторая строка.\n\n\nТретий  абзац."


def test_overlap_shares_words_between_neighbours() -> None:
    snippets = make_snippets(source("a b c d e f g h i j"), window=4, overlap=1)
    assert [s.text for s in snippets] == ["a b c d", "d e f g", "g h i j"]


def test_empty_source_gives_no_snippet() -> None:
    assert make_snippets(source("  \n ")) == []
