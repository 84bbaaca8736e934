"""A small synthetic dataset for ranking tests: topical Russian/English snippets with inflected words."""

from __future__ import annotations

import random

from ruwikibench.dataset import Article, Dataset, Paragraph, Section, Snippet, Source, snippet_id

TOPICS: dict[str, list[str]] = {
    "Квантовый компьютер": [
        "квантовый компьютер",
        "квантовых компьютеров",
        "кубит",
        "кубитами",
        "суперпозиция",
        "запутанность",
        "квантовые алгоритмы",
        "алгоритм Шора",
        "декогеренция",
        "qubit",
        "quantum computing",
    ],
    "Python": [
        "язык программирования",
        "языке Python",
        "интерпретатор",
        "интерпретатора",
        "Гвидо ван Россум",
        "динамическая типизация",
        "стандартная библиотека",
        "programming language",
        "Python interpreter",
    ],
    "Летние Олимпийские игры 2024": [
        "Олимпийские игры",
        "олимпийских игр",
        "Париж",
        "Парижа",
        "спортсмены",
        "спортсменов",
        "медали",
        "медалей",
        "церемония открытия",
        "Olympic Games",
        "athletes",
    ],
    "Сколково": [
        "инновационный центр",
        "инновационного центра",
        "Сколково",
        "стартапы",
        "стартапов",
        "технопарк",
        "резиденты",
        "венчурные инвестиции",
        "innovation centre",
        "startups",
    ],
}
FILLER = [
    "в",
    "и",
    "на",
    "по",
    "году",
    "также",
    "который",
    "было",
    "этот",
    "новый",
    "мир",
    "страна",
    "история",
    "развитие",
    "проект",
    "работа",
    "время",
    "люди",
    "the",
    "of",
    "and",
    "new",
]


ALL_WORDS = [w for words in TOPICS.values() for w in words]


def _text(rng: random.Random, words: list[str], n: int, topical: float, stray: float = 0.0) -> str:
    """n draws: the topic's words with probability ``topical``, any topic's words with ``stray``, else
    filler."""
    out = []
    for _ in range(n):
        x = rng.random()
        out.append(
            rng.choice(words)
            if x < topical
            else rng.choice(ALL_WORDS)
            if x < topical + stray
            else rng.choice(FILLER)
        )
    return " ".join(out)


def make_dataset(snippets_per_source: int = 2, sources_per_article: int = 3, seed: int = 7) -> Dataset:
    """Four articles × ``sources_per_article`` sources × ``snippets_per_source`` snippets of 60 words."""
    rng = random.Random(seed)
    articles, sources, snippets = [], [], []
    for number, (title, words) in enumerate(TOPICS.items()):
        name = title
        h2 = [
            Section(
                id=f"s{i}",
                level=2,
                title=f"Раздел {i} о {words[0]}",
                paragraphs=[Paragraph(text=_text(rng, words, 20, 0.5), citations=[f"cite_note-{i}"])],
            )
            for i in range(1, 3)
        ]
        root = Section(
            id="s0",
            level=1,
            title=title,
            paragraphs=[Paragraph(text=_text(rng, words, 20, 0.5))],
            children=h2,
        )
        source_ids = []
        for s in range(sources_per_article):
            source_id = f"{name}/source_{s}"
            source_ids.append(source_id)
            texts = [
                f"метка{number}x{s}x{k} " + _text(rng, words, 60, 0.1 + 0.1 * ((s + k) % 3), stray=0.15)
                for k in range(snippets_per_source)
            ]
            sources.append(
                Source(id=source_id, article=name, footnote_id=f"cite_note-{s % 2 + 1}", text=" ".join(texts))
            )
            for k, text in enumerate(texts):
                snippets.append(
                    Snippet(
                        id=snippet_id(source_id, k),
                        article=name,
                        source_id=source_id,
                        index=k,
                        text=text,
                        word_start=k * 60,
                        word_end=(k + 1) * 60,
                    )
                )
        articles.append(Article(title=title, name=name, root=root, source_ids=source_ids))
    return Dataset(articles=articles, sources=sources, snippets=snippets)


def article_of_prompt(dataset: Dataset, prompt: str) -> tuple[str, str]:
    """(asked title, article of the snippet quoted in a relevance prompt), found by the snippet's marker."""
    title = prompt.split("под названием «", 1)[1].split("»", 1)[0]
    for snip in dataset.snippets:
        if snip.text.split(" ", 1)[0] + " " in prompt:
            return title, snip.article
    raise AssertionError("no snippet marker in the prompt")


def make_context(dataset: Dataset, responders: dict, tmp_path, **ranking):  # -> StageContext
    """A StageContext with scripted fake models per role and a ranking config built from ``ranking``."""
    from ruwikibench.conf.builtin_options import RankingConfig
    from ruwikibench.conf.config import ModelConfig, RunConfig
    from ruwikibench.models.fake import ScriptedChat
    from ruwikibench.models.llm import LLM
    from ruwikibench.prompts import PromptLibrary
    from ruwikibench.stage.context import StageContext

    models = {role: ModelConfig(name=f"fake-{role}") for role in responders}
    config = RunConfig(models=models, ranking=RankingConfig(**ranking), cache_dir=str(tmp_path / "cache"))
    backends = {
        role: r if hasattr(r, "generate") else ScriptedChat(r, name=f"fake-{role}")
        for role, r in responders.items()
    }
    return StageContext(
        config=config,
        llm=LLM(backends, max_concurrency=8),
        embedder=None,  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=dataset,
        dataset_dir=tmp_path,
    )
