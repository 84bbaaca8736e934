"""A small corpus and a scripted fake model for the writer tests.

The target article «Москва» has three sources (history, geography, economy) of two snippets each; two other
articles are distractors. Every snippet carries a unique tag word (``тегA_S_K``) so the fake model can tell
which snippets a prompt shows, and so a test can check that a sentence's [n] marker points at the snippet
the sentence was written from. The target's gold headings and texts carry the word ЗОЛОТО, which must never
reach a prompt in writer mode.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from ruwikibench.conf.builtin_options import RankingConfig, SectionsConfig
from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.dataset import Article, Dataset, Paragraph, Reference, Section, Snippet, Source
from ruwikibench.models.embeddings import normalize
from ruwikibench.models.fake import ScriptedChat, yes_no_completion
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext

TITLE = "Москва"
TAG = re.compile(r"тег\d+_\d+_\d+")

TOPICS = {
    "Москва": [
        (
            "история",
            (
                "Москва впервые упомянута в летописи в 1147 году, основание Москвы связывают с князем Юрием "
                "Долгоруким, история города началась с крепости на холме"
            ),
        ),
        (
            "география",
            (
                "Москва стоит на реке Москве, география города включает холмы, климат Москвы умеренно "
                "континентальный, зима снежная"
            ),
        ),
        (
            "экономика",
            (
                "экономика Москвы: банки, промышленность и торговля, в Москве работают крупнейшие "
                "предприятия и биржа"
            ),
        ),
    ],
    "Python": [
        ("язык", "Python — язык программирования с динамической типизацией, интерпретатор написан на C"),
        ("история", "история языка Python началась в 1991 году, автор языка Гвидо ван Россум"),
    ],
    "Сколково": [
        ("центр", "Сколково — инновационный центр под Москвой, где работают стартапы и технопарк"),
        ("экономика", "экономика Сколково держится на венчурных инвестициях и грантах резидентам"),
    ],
}


def make_dataset() -> Dataset:
    articles, sources, snippets = [], [], []
    for a, (title, topics) in enumerate(TOPICS.items()):
        children, references, source_ids = [], [], []
        for s, (topic, text) in enumerate(topics):
            footnote = f"cite_note-{s + 1}"
            references.append(
                Reference(id=footnote, urls=[f"https://example.org/{a}/{s}"], label=f"Книга {a}.{s}")
            )
            gold = "ЗОЛОТО " * 3 + f"эталонный текст о теме {topic}" if title == TITLE else f"текст о {topic}"
            children.append(
                Section(
                    id=f"s{s + 1}",
                    level=2,
                    title=f"ЗОЛОТО {topic}" if title == TITLE else topic,
                    paragraphs=[Paragraph(text=gold + ".", citations=[footnote])],
                )
            )
            source_id = f"{title}/src{s}"
            source_ids.append(source_id)
            parts = [f"тег{a}_{s}_{k} {text}. Подробность номер {k} о теме {topic}." for k in range(2)]
            sources.append(
                Source(
                    id=source_id,
                    article=title,
                    footnote_id=footnote,
                    text=" ".join(parts),
                    url=f"https://example.org/{a}/{s}",
                )
            )
            for k, part in enumerate(parts):
                snippets.append(
                    Snippet(
                        id=f"{source_id}#{k}",
                        article=title,
                        source_id=source_id,
                        index=k,
                        text=part,
                        word_start=0,
                        word_end=len(part.split()),
                    )
                )
        lead = "ЗОЛОТО преамбула." if title == TITLE else "Преамбула."
        root = Section(id="s0", level=1, title=title, paragraphs=[Paragraph(text=lead)], children=children)
        articles.append(
            Article(title=title, name=title, root=root, references=references, source_ids=source_ids)
        )
    return Dataset(articles=articles, sources=sources, snippets=snippets)


class HashEmbedder:
    """Deterministic bag-of-words vectors (md5 buckets), L2-normalized."""

    id = "hash"

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        out = np.zeros((len(texts), 512), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 512] += 1
        return normalize(out)


class HashEmbeddings:
    """:class:`HashEmbedder` as a LangChain ``Embeddings`` class: a config names it (``kind: langchain``,
    ``name: tests.graphs.writer_fixture:HashEmbeddings``), so a process that builds its own services from the
    config (the scoring process) gets the same vectors."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return HashEmbedder().embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


MERGED_OUTLINE = "# Москва\n## История\n## География\n### Климат\n## Экономика\n**END**"


PROMPT_FILES = {
    "relevance": "ru/relevance.txt",
    "query_ru": "ru/query_description_ru.txt",
    "query_en": "ru/query_description_en.txt",
    "merge": "ru/outline_merge.txt",
    "mini": "ru/outline_mini_description.txt",
    "mini_direct": "ru/outline_mini_direct.txt",
    "outline_describe": "ru/outline_describe.txt",
    "extend": "ru/section_extend.txt",
    "describe": "ru/section_describe.txt",
    "write_section": "ru/writer_section.txt",
    "lead": "ru/writer_lead.txt",
    "support": "ru/citation_support.txt",
}


def _fragments(text: str) -> list[str]:
    """The fixed parts of a template (the text between its {fields}), long enough to be telling."""
    return [part.strip() for part in re.split(r"\{[a-z_]+\}", text) if len(part.strip()) >= 12]


_TEMPLATES = {name: _fragments(PromptLibrary().get(path).text) for name, path in PROMPT_FILES.items()}


def kind(prompt: str) -> str:
    """Which prompt file a prompt was formatted from: the one whose fixed parts it all contains (most parts
    first, so a template contained in another is not mistaken for it)."""
    for name, parts in sorted(_TEMPLATES.items(), key=lambda item: -sum(map(len, item[1]))):
        if parts and all(part in prompt for part in parts):
            return "mini" if name == "mini_direct" else name
    return "other"


class FakeWriterModel:
    """Answers every writer prompt; records the prompts; judges relevance by the snippet's article."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.by_tag = {TAG.search(s.text).group(0): s for s in dataset.snippets}  # type: ignore[union-attr]

    def __call__(self, messages):
        prompt = messages[-1]["content"]
        name = kind(prompt)
        if name == "support":  # supported when the claim names a tag of the passage shown
            passage, claim = prompt.split('"""')[1], prompt.split('"""')[3]
            return yes_no_completion(0.9 if set(TAG.findall(claim)) & set(TAG.findall(passage)) else 0.1)
        if name == "relevance":
            tags = TAG.findall(prompt)
            return yes_no_completion(0.95 if tags and self.by_tag[tags[0]].article == TITLE else 0.05)
        if name.startswith("query"):
            return "Москва — столица. История, география и экономика Москвы."
        if name == "merge":
            return MERGED_OUTLINE
        if name == "mini":
            return "## История\n## География"
        if name in ("outline_describe",):
            return "Описание группы фрагментов."
        if name in ("describe", "extend"):
            return "Сведения: " + " ".join(sorted(set(TAG.findall(prompt)))) + "."
        if name == "write_section":
            return self.section(prompt)
        if name == "lead":
            first = re.search(r"\[(\d+)\]", prompt.split("\n\n", 1)[1])
            cite = f" [{first.group(1)}]" if first else ""
            return f"# Москва\nМосква — город{cite}. Выдуманный факт [77]."
        raise AssertionError(f"unexpected prompt: {prompt[:200]}")

    @staticmethod
    def section(prompt: str) -> str:
        """One sentence per numbered material naming the tags it describes, cited with its number; plus one
        marker out of range."""
        materials = prompt.split("Материалы (пронумерованные описания источников):", 1)[1].split(
            "Требования:"
        )[0]
        sentences = []
        for number, body in re.findall(r"^\[(\d+)\] (.+)$", materials, flags=re.MULTILINE):
            tags = " ".join(TAG.findall(body))
            sentences.append(f"Факт из {tags} [{number}].")
        return " ".join(sentences) + " Лишнее [99]."


def make_context(tmp_path, **writer: object) -> tuple[StageContext, ScriptedChat]:
    dataset = make_dataset()
    chat = ScriptedChat(FakeWriterModel(dataset))
    roles = ("query", "ranking", "outline", "writer")
    config = RunConfig(
        models={role: ModelConfig(name="fake") for role in roles},
        writer={"candidates": 12, "min_relevance": 0.5, "per_section": 3, **writer},
        cache_dir=str(tmp_path / "cache"),
    )
    # The run config asks for the stored reference query (gold headings) and the oracle filter (gold text):
    # the writer profile must override both.
    config.options(RankingConfig).query_mode = "reference"
    config.options(SectionsConfig).oracle_filter = 0.3
    llm = LLM({role: chat for role in roles}, max_concurrency=4)
    context = StageContext(
        config=config, llm=llm, embedder=HashEmbedder(), prompts=PromptLibrary(), dataset=dataset
    )
    return context.with_profile("writer"), chat


def prompts_of(chat: ScriptedChat, name: str | None = None) -> list[str]:
    return [m[-1]["content"] for m in chat.calls if name is None or kind(m[-1]["content"]) == name]
