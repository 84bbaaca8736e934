"""A small synthetic dataset for ranking tests: topical Russian/English snippets with inflected words."""

from __future__ import annotations

import random

from ruwikibench.dataset import Article, Dataset, Paragraph, Section, Snippet, Source, snippet_id

TOPICS: dict[str, list[str]] = {
    "Квантовый компьютер": [
        "квантовый компьютер", "квантовых компьютеров", "кубит", "кубитами", "суперпозиция", "запутанность",
        "квантовые алгоритмы", "алгоритм Шора", "декогеренция", "qubit", "quantum computing",
    ],
    "Python": [
        "язык программирования", "языке Python", "интерпретатор", "интерпретатора", "Гвидо ван Россум",
        "динамическая типизация", "стандартная библиотека", "programming language", "Python interpreter",
    ],
    "Летние Олимпийские игры 2024": [
        "Олимпийские игры", "олимпийских игр", "Париж", "Парижа", "спортсмены", "спортсменов", "медали",
        "медалей", "церемония открытия", "Olympic Games", "athletes",
    ],
    "Сколково": [
        "инновационный центр", "инновационного центра", "Сколково", "стартапы", "стартапов", "технопарк",
        "резиденты", "венчурные инвестиции", "innovation centre", "startups",
    ],
}
FILLER = [
    "в", "и", "на", "по", "году", "также", "который", "было", "этот", "новый", "мир", "страна", "история",
    "развитие", "проект", "работа", "время", "люди", "the", "of", "and", "new",
]


def _text(rng: random.Random, words: list[str], n: int, topical: float) -> str:
    out = []
    for _ in range(n):
        out.append(rng.choice(words) if rng.random() < topical else rng.choice(FILLER))
    return " ".join(out)


def make_dataset(snippets_per_source: int = 2, sources_per_article: int = 3, seed: int = 7) -> Dataset:
    """Four articles × ``sources_per_article`` sources × ``snippets_per_source`` snippets of 60 words."""
    rng = random.Random(seed)
    articles, sources, snippets = [], [], []
    for number, (title, words) in enumerate(TOPICS.items()):
        name = title
        h2 = [Section(id=f"s{i}", level=2, title=f"Раздел {i} о {words[0]}",
                      paragraphs=[Paragraph(text=_text(rng, words, 20, 0.5), citations=[f"cite_note-{i}"])])
              for i in range(1, 3)]
        root = Section(id="s0", level=1, title=title, paragraphs=[Paragraph(text=_text(rng, words, 20, 0.5))],
                       children=h2)
        source_ids = []
        for s in range(sources_per_article):
            source_id = f"{name}/source_{s}"
            source_ids.append(source_id)
            texts = [_text(rng, words, 60, 0.35 + 0.1 * (k % 3)) + f" метка{number}x{s}x{k}"
                     for k in range(snippets_per_source)]
            sources.append(Source(id=source_id, article=name, footnote_id=f"cite_note-{s % 2 + 1}",
                                  text=" ".join(texts)))
            for k, text in enumerate(texts):
                snippets.append(Snippet(id=snippet_id(source_id, k), article=name, source_id=source_id, index=k,
                                        text=text, word_start=k * 60, word_end=(k + 1) * 60))
        articles.append(Article(title=title, name=name, root=root, source_ids=source_ids))
    return Dataset(articles=articles, sources=sources, snippets=snippets)
