"""Cutting texts for prompts and numbering them: the rules each caller asks for, hand-checked."""

import random

from ruwikibench.prompts.render import cut_text, numbered_texts


def test_cut_squashes_whitespace_and_cuts_at_a_word_boundary() -> None:
    assert cut_text("один  два\nтри", None) == "один два три"
    assert cut_text("один два три четыре", 12) == "один два …"
    assert cut_text("короткий", 100) == "короткий"


def test_keep_decides_between_a_word_boundary_and_a_hard_cut() -> None:
    text = "ab cdefghijklmnop"  # the only space at index 2
    assert cut_text(text, 10, keep=0) == "ab …"  # any boundary will do
    assert cut_text(text, 10, keep=0.6) == "ab cdefghi …"  # the boundary lies too far back: cut mid-word


def test_unsquashed_text_keeps_its_lines_and_its_marker() -> None:
    body = "# Заголовок\nпервый абзац текста\n\nвторой абзац"
    # body[:30] ends «…абзац текст»; its last space is at 24, which is beyond 0.6 × 30 but not beyond 0.8 × 30
    assert cut_text(body, 30, squash=False, keep=0.6, marker=" […]") == "# Заголовок\nпервый абзац […]"
    assert cut_text(body, 30, squash=False, keep=0.8, marker=" […]") == "# Заголовок\nпервый абзац текст […]"


def test_the_cut_never_exceeds_the_limit_before_the_marker() -> None:
    rng = random.Random(0)
    words = ["а", "бб", "ввв", "гггг", "дддддддд"]
    for _ in range(300):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 40)))
        limit = rng.randint(1, 60)
        cut = cut_text(text, limit, keep=rng.choice([0, 0.5, 0.8]))
        assert cut == text or (cut.endswith(" …") and len(cut) - 2 <= limit and text.startswith(cut[:-2]))


def test_numbered_texts_from_one_or_with_given_numbers() -> None:
    assert numbered_texts(["а", "б"]) == "[1] а\n\n[2] б"
    assert numbered_texts(["первый  текст", "второй"], 6, numbers=[3, 7]) == "[3] первый …\n\n[7] второй"
