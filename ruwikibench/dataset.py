"""The dataset model: articles with an outline tree, references, sources and snippets.

Everything the stages consume is built from these pydantic models; a processed dataset directory
is these models serialized as JSONL plus a manifest (see :mod:`ruwikibench.corpus_builder.store`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def safe_name(title: str) -> str:
    """File-safe article name: the characters ``<>:"/\\|?*`` removed, as RuWikiBench's
    ``article_cleared_name``."""
    name = _UNSAFE.sub("", title).strip().rstrip(".")
    return name or "untitled"


class Paragraph(BaseModel):
    """A paragraph of article text with footnote marks removed and the footnote ids it cites, in order."""

    model_config = ConfigDict(frozen=True)

    text: str
    citations: list[str] = Field(default_factory=list, description="footnote ids (e.g. cite_note-5) in order")
    notes: list[str] = Field(
        default_factory=list, description="explanatory-note ids ([прим. 1]), not sources"
    )


class Section(BaseModel):
    """A node of the outline tree. ``level`` 1 is the article itself (the lead), 2 = h2, 3 = h3, ..."""

    id: str = Field(
        description="unique within the article, e.g. 's3' — two headings with one title stay apart"
    )
    level: int
    title: str
    paragraphs: list[Paragraph] = Field(default_factory=list)
    children: list[Section] = Field(default_factory=list)

    def walk(self) -> Iterator[Section]:
        """This section and all its descendants in document order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def text(self) -> str:
        """The section's own paragraphs joined by blank lines (descendants excluded)."""
        return "\n\n".join(p.text for p in self.paragraphs)

    def cited_footnotes(self) -> list[str]:
        """Footnote ids cited by this section's own paragraphs, first-occurrence order, no duplicates."""
        seen: dict[str, None] = {}
        for paragraph in self.paragraphs:
            for footnote in paragraph.citations:
                seen.setdefault(footnote, None)
        return list(seen)


class Reference(BaseModel):
    """An entry of the article's reference list (a footnote)."""

    id: str = Field(description="footnote id, the id of the <li> in the reference list")
    urls: list[str] = Field(default_factory=list)
    label: str = ""
    is_note: bool = Field(default=False, description="an explanatory note ([прим. N]), not a source citation")
    other_links: list[str] = Field(
        default_factory=list,
        exclude=True,
        description="links with a scheme other than http(s) (file:, ftp:, gopher: …), never fetched; seen by "
        "the corpus builder (which records them as refused) and not saved with the dataset",
    )


class Article(BaseModel):
    title: str
    name: str = Field(description="file-safe name, unique in the dataset")
    root: Section = Field(description="level-1 section: the lead; its children are the h2 sections")
    references: list[Reference] = Field(default_factory=list)
    source_ids: list[str] = Field(default_factory=list, description="ids of the article's kept sources")

    def sections(self) -> list[Section]:
        """All sections in document order, the lead (level 1) first."""
        return list(self.root.walk())

    def headings(self, min_level: int = 1, max_level: int = 99) -> list[Section]:
        return [s for s in self.sections() if min_level <= s.level <= max_level]

    def h2_titles(self) -> list[str]:
        return [s.title for s in self.root.children]

    def section(self, section_id: str) -> Section:
        for section in self.sections():
            if section.id == section_id:
                return section
        raise KeyError(f"article {self.title!r} has no section {section_id!r}")


class TextOnDisk:
    """Where an item's text is kept when a dataset is loaded without it
    (``load_dataset(…, source_texts=False)`` for the sources, ``snippet_texts=False`` for the snippets): its
    line in the dataset file, read again each time the text is asked for."""

    __slots__ = ("offset", "path")

    def __init__(self, path: str, offset: int) -> None:
        self.path = path
        self.offset = offset

    def read(self, item_id: str) -> str:
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            line = handle.readline()
        try:
            row = json.loads(line)
        except ValueError:  # a line cut anywhere: not JSON, or not UTF-8
            row = None
        if not isinstance(row, dict) or row.get("id") != item_id or not isinstance(row.get("text"), str):
            raise ValueError(
                f"{self.path}: changed since the dataset was loaded (no item {item_id!r} at byte "
                f"{self.offset}); load the dataset again"
            )
        return row["text"]


class TextMayStayOnDisk(BaseModel):
    """An item (source or snippet) whose ``text`` may be left on disk (:class:`TextOnDisk`): ``text`` then
    reads its line when asked for, and dumping, comparing or copying the item loads it for good first, so
    every use sees the same item either way."""

    id: str
    text: str

    _on_disk: TextOnDisk | None = PrivateAttr(default=None)

    def __getattr__(self, name: str) -> Any:
        if name == "text":
            on_disk = (self.__pydantic_private__ or {}).get("_on_disk")
            if on_disk is not None:
                return on_disk.read(self.id)
        return super().__getattr__(name)  # type: ignore[misc]

    def leave_text_on_disk(self, on_disk: TextOnDisk) -> None:
        """Drop the text from memory; ``text`` reads it from ``on_disk`` from now on."""
        self._on_disk = on_disk
        self.__dict__.pop("text", None)

    def load_text(self) -> Any:
        """The text back in memory (no-op when it is there); returns the item."""
        if "text" not in self.__dict__:
            values = {**self.__dict__, "text": self.text}
            self.__dict__.clear()  # refilled in the fields' order: a dump lists them as a loaded item does
            self.__dict__.update((name, values[name]) for name in type(self).model_fields)
            self._on_disk = None
        return self

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return super(TextMayStayOnDisk, self.load_text()).model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        return super(TextMayStayOnDisk, self.load_text()).model_dump_json(**kwargs)

    def model_copy(self, **kwargs: Any) -> Any:
        return super(TextMayStayOnDisk, self.load_text()).model_copy(**kwargs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TextMayStayOnDisk):
            self.load_text(), other.load_text()
        return super().__eq__(other)


class Source(TextMayStayOnDisk):
    """A downloaded text cited by an article. Several sources may share one footnote id.

    A run never reads the sources' texts (its stages work on the snippets), ~a quarter GB at the paper's size:
    a dataset loaded for a run leaves them on disk (:class:`TextOnDisk`)."""

    id: str = Field(description="'<article name>/<file stem>', unique in the dataset")
    article: str = Field(description="Article.name")
    footnote_id: str = Field(description="the footnote that cites it; one that no footnote carries = uncited")
    text: str
    url: str | None = None
    file: str | None = None


class Snippet(TextMayStayOnDisk):
    """A window of a source's words. ``id`` = '<source id>#<chunk index>'. The scoring process
    (runner/score_process.py) loads the snippets with their texts on disk: the units it scores carry the texts
    they use."""

    id: str
    article: str
    source_id: str
    index: int
    text: str
    word_start: int
    word_end: int


def snippet_id(source_id: str, index: int) -> str:
    return f"{source_id}#{index}"


class Dataset(BaseModel):
    """Articles, sources and snippets with lookups by id and a content hash (the dataset id)."""

    articles: list[Article]
    sources: list[Source]
    snippets: list[Snippet]
    params: dict[str, object] = Field(default_factory=dict, description="build parameters (filters, window)")

    _by_id: dict[str, dict[str, object]] | None = PrivateAttr(default=None)
    _groups: dict[str, dict[str, list[Any]]] | None = PrivateAttr(default=None)

    def _index(self) -> dict[str, dict[str, object]]:
        if self._by_id is None:
            self._by_id = {
                "article": {a.name: a for a in self.articles},
                "source": {s.id: s for s in self.sources},
                "snippet": {s.id: s for s in self.snippets},
            }
        return self._by_id

    def load_source_texts(self) -> Dataset:
        """Every source's and snippet's text in memory (those a load left on disk: :class:`TextOnDisk`);
        returns the dataset."""
        for item in (*self.sources, *self.snippets):
            item.load_text()
        return self

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return super(Dataset, self.load_source_texts()).model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        return super(Dataset, self.load_source_texts()).model_dump_json(**kwargs)

    def __eq__(self, other: object) -> bool:
        """Content equality (lookup indexes and the cached dataset id are ignored)."""
        if not isinstance(other, Dataset):
            return NotImplemented
        return (self.articles, self.sources, self.snippets, self.params) == (
            other.articles,
            other.sources,
            other.snippets,
            other.params,
        )

    def article(self, name: str) -> Article:
        found = self._index()["article"].get(name)
        if found is None:
            by_title = [a for a in self.articles if a.title == name]
            if by_title:
                return by_title[0]
            raise KeyError(f"no article {name!r} in the dataset")
        return found  # type: ignore[return-value]

    def source(self, source_id: str) -> Source:
        return self._index()["source"][source_id]  # type: ignore[return-value]

    def snippet(self, snip_id: str) -> Snippet:
        return self._index()["snippet"][snip_id]  # type: ignore[return-value]

    def _grouped(self) -> dict[str, dict[str, list[Any]]]:
        """Sources and snippets grouped by article and by source, in dataset order, built on first use: each
        lookup was a scan of the whole dataset, made per unit and per section (quadratic in the dataset's
        size)."""
        if self._groups is None:
            groups: dict[str, defaultdict[str, list[Any]]] = {
                "sources": defaultdict(list),
                "snippets": defaultdict(list),
                "by_source": defaultdict(list),
            }
            for source in self.sources:
                groups["sources"][source.article].append(source)
            for snip in self.snippets:
                groups["snippets"][snip.article].append(snip)
                groups["by_source"][snip.source_id].append(snip)
            self._groups = {name: dict(group) for name, group in groups.items()}
        return self._groups

    def sources_of(self, article: str) -> list[Source]:
        return list(self._grouped()["sources"].get(article, ()))

    def snippets_of(self, article: str) -> list[Snippet]:
        return list(self._grouped()["snippets"].get(article, ()))

    def snippets_of_source(self, source_id: str) -> list[Snippet]:
        return list(self._grouped()["by_source"].get(source_id, ()))

    def section_snippets(self, article: Article, section: Section) -> list[Snippet]:
        """Snippets of every kept source cited by the section's own paragraphs (benchmark-mode stage 3
        input)."""
        cited = set(section.cited_footnotes())
        source_ids = {s.id for s in self.sources_of(article.name) if s.footnote_id in cited}
        return [s for s in self.snippets_of(article.name) if s.source_id in source_ids]

    @cached_property
    def dataset_id(self) -> str:
        """sha256 (first 16 hex) over the canonical JSON of articles, sources and snippets."""
        digest = hashlib.sha256()
        for group in (self.articles, self.sources, self.snippets):
            for item in group:
                digest.update(
                    json.dumps(item.model_dump(mode="json"), ensure_ascii=False, sort_keys=True).encode()
                )
        return digest.hexdigest()[:16]
