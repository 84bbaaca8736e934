"""Search queries for stage 1: LLM-written article descriptions (Russian + English, joined by a newline).

``reference`` queries are written ONCE per dataset from the title and the article's H2 headings by the
``reference`` role model and stored next to the dataset (``<dataset dir>/reference_queries.json``, with the
model's name, the prompt hash and the dataset id), so every evaluated model ranks the same candidate pool
(paper Table 3). Create them with::

    import asyncio
    from ruwikibench.nodes.queries import generate_reference_queries
    asyncio.run(generate_reference_queries(dataset_dir, context))
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ruwikibench.conf.builtin_options import RankingConfig
from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article
from ruwikibench.nodes.answers import ask
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runtime.progress import progress_bar
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.durable import replace_durably

REFERENCE_QUERIES_FILE = "reference_queries.json"


class QueryRecord(BaseModel):
    title: str
    ru: str
    en: str

    @property
    def query(self) -> str:
        return join_query(self.ru, self.en)


class ReferenceQueries(BaseModel):
    """The stored reference queries of one dataset."""

    dataset_id: str
    model: str = Field(description="name of the reference model that wrote them")
    model_identity: dict[str, object] = Field(default_factory=dict)
    prompts: dict[str, str] = Field(default_factory=dict, description="prompt file -> sha256")
    created: str = ""
    queries: dict[str, QueryRecord] = Field(default_factory=dict, description="Article.name -> descriptions")


class ReferenceQueriesError(RuntimeError):
    """Reference queries are missing or do not fit the dataset; the message says how to create them."""


HOW_TO = (
    "create them once with the reference model: `ruwikibench ranking reference-queries --dataset DATA "
    "--config CONFIG` (config role 'reference'), or choose "
    "ranking.query_mode 'generated' or 'title'"
)


def join_query(ru: str, en: str) -> str:
    """The BM25 query: the Russian and the English description, one per line (empty parts left out)."""
    return "\n".join(part.strip() for part in (ru, en) if part.strip())


def headings_block(article: Article, prompts: PromptLibrary) -> str:
    titles = article.h2_titles()
    return "\n".join(f"- {t}" for t in titles) if titles else prompts.fragment("no_sections")


async def reference_record(article: Article, context: StageContext) -> QueryRecord:
    """Russian and English reference descriptions of an article from its title and H2 headings."""
    cfg = context.config.options(RankingConfig)
    headings = headings_block(article, context.prompts)
    ru, en = await asyncio.gather(
        *(
            ask(context, "reference", name, title=article.title, headings=headings)
            for name in (cfg.prompt_reference_query, cfg.prompt_reference_query_en)
        )
    )
    if not ru and not en:
        raise ReferenceQueriesError(
            f"article {article.name!r}: the reference model returned two empty descriptions"
        )
    return QueryRecord(title=article.title, ru=ru, en=en)


def reference_queries_path(context: StageContext) -> Path:
    """``ranking.reference_queries`` if set, else ``<dataset dir>/reference_queries.json``."""
    return reference_queries_file(context.config, context.dataset_dir)


def reference_queries_file(config: RunConfig, dataset_dir: Path | None) -> Path:
    """:func:`reference_queries_path` from a config and a dataset directory."""
    configured = config.options(RankingConfig).reference_queries
    if configured:
        return Path(configured).expanduser()
    if dataset_dir is None:
        raise ReferenceQueriesError(
            "ranking.query_mode is 'reference' but neither ranking.reference_queries nor the dataset "
            f"directory (StageContext.dataset_dir) is set; {HOW_TO}"
        )
    return Path(dataset_dir) / REFERENCE_QUERIES_FILE


def reference_queries_identity(config: RunConfig, dataset_dir: Path | None) -> dict[str, str | None]:
    """Which stored reference queries a run ranks with: the file's path, the sha256 of its bytes and the name
    of the model that wrote it. Never raises: what cannot be known is None (no path configured, no file, not a
    reference-queries file), and the ranking units then fail with the error that names the fix."""
    try:
        path = reference_queries_file(config, dataset_dir)
        data = path.read_bytes()
    except ReferenceQueriesError:
        return {"path": None, "sha256": None, "model": None}
    except OSError:
        return {"path": str(path), "sha256": None, "model": None}
    try:
        model: str | None = ReferenceQueries.model_validate_json(data).model
    except ValidationError:
        model = None
    return {"path": str(path), "sha256": hashlib.sha256(data).hexdigest(), "model": model}


def read_reference_queries(path: Path) -> ReferenceQueries:
    try:
        return ReferenceQueries.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ReferenceQueriesError(f"{path}: no stored reference queries; {HOW_TO}") from exc
    except ValidationError as exc:
        raise ReferenceQueriesError(f"{path}: not a reference-queries file: {exc}") from exc


_LOADED: dict[tuple[str, float], ReferenceQueries] = {}


def reference_query(context: StageContext, article: str) -> str:
    """The stored reference query of an article; a clear error when it is missing or from another dataset."""
    path = reference_queries_path(context)
    key = (str(path), path.stat().st_mtime if path.exists() else 0.0)
    if key not in _LOADED:
        _LOADED[key] = read_reference_queries(path)
    stored = _LOADED[key]
    dataset = context.dataset
    if dataset is not None and stored.dataset_id != dataset.dataset_id:
        raise ReferenceQueriesError(
            f"{path}: written for dataset {stored.dataset_id}, this dataset is {dataset.dataset_id}; "
            f"regenerate them ({HOW_TO})"
        )
    record = stored.queries.get(article)
    if record is None:
        raise ReferenceQueriesError(f"{path}: no reference query for article {article!r}; {HOW_TO}")
    return record.query


def _write_atomically(path: Path, payload: ReferenceQueries) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(payload.model_dump_json(indent=1))
    os.chmod(tmp, 0o644)
    replace_durably(tmp, path)


async def generate_reference_queries(
    dataset_dir: str | Path,
    context: StageContext,
    *,
    articles: list[str] | None = None,
    overwrite: bool = False,
    progress: bool = True,
    file: str | Path | None = None,
) -> Path:
    """Write ``<dataset_dir>/reference_queries.json`` (or ``file``) with the ``reference`` model; returns the
    path.

    Resumable: articles already stored (by the same model, for the same dataset) are kept; the file is
    rewritten after every article. ``overwrite`` regenerates everything (needed to switch models). The first
    article that fails stops it (the queries stored so far are kept).
    """
    path = Path(file) if file is not None else Path(dataset_dir) / REFERENCE_QUERIES_FILE
    payload = _stored_or_new(path, context, overwrite)
    await _write_queries(payload, path, _todo(payload, context, articles), context, progress, failures=None)
    if not path.exists():
        _write_atomically(path, payload)
    return path


class QueriesWritten(BaseModel):
    """What :func:`write_missing_reference_queries` did."""

    path: Path
    written: int = 0
    failed: dict[str, str] = Field(
        default_factory=dict, description="Article.name -> why its query is missing"
    )


async def write_missing_reference_queries(
    context: StageContext, articles: list[str], *, progress: bool = True
) -> QueriesWritten | None:
    """The reference queries of ``articles`` not stored yet, written with the ``reference`` model to
    :func:`reference_queries_path` (a run in ``query_mode: reference`` calls it before ranking). An article
    whose query fails is counted in ``failed`` and the others are written. None (nothing done) when every
    article is stored, when there is no place for the file, or when the file holds another model's or
    dataset's queries (the ranking units then fail with the error that names the fix)."""
    try:
        path = reference_queries_path(context)
        payload = _stored_or_new(path, context, overwrite=False)
    except ReferenceQueriesError:
        return None
    todo = _todo(payload, context, articles)
    if not todo:
        return None
    failures: dict[str, str] = {}
    await _write_queries(payload, path, todo, context, progress, failures)
    return QueriesWritten(path=path, written=len(todo) - len(failures), failed=failures)


def _stored_or_new(path: Path, context: StageContext, overwrite: bool) -> ReferenceQueries:
    """The queries stored in ``path`` (same dataset and reference model), or an empty payload to fill."""
    dataset = context.dataset
    if dataset is None:
        raise ValueError("generate_reference_queries needs StageContext.dataset")
    model = context.config.model_for("reference")
    prompts = [
        context.prompts.get(name)
        for name in (
            context.config.options(RankingConfig).prompt_reference_query,
            context.config.options(RankingConfig).prompt_reference_query_en,
        )
    ]
    stored = None if overwrite or not path.exists() else read_reference_queries(path)
    if stored is not None and (stored.dataset_id != dataset.dataset_id or stored.model != model.name):
        raise ReferenceQueriesError(
            f"{path}: holds queries by {stored.model!r} for dataset {stored.dataset_id}; this run has "
            f"{model.name!r} and dataset {dataset.dataset_id}: pass overwrite=True to regenerate all"
        )
    return stored or ReferenceQueries(
        dataset_id=dataset.dataset_id,
        model=model.name,
        model_identity=model.identity(),
        prompts={p.name: p.sha256 for p in prompts},
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _todo(payload: ReferenceQueries, context: StageContext, articles: list[str] | None) -> list[Article]:
    assert context.dataset is not None
    return [
        a
        for a in context.dataset.articles
        if (articles is None or a.name in articles) and a.name not in payload.queries
    ]


async def _write_queries(
    payload: ReferenceQueries,
    path: Path,
    todo: list[Article],
    context: StageContext,
    progress: bool,
    failures: dict[str, str] | None,
) -> None:
    """Ask the reference model for every article of ``todo``, storing each answer at once. ``failures`` None:
    the first failure propagates; else each failure is recorded there (article name -> reason) and the rest go
    on."""
    lock = asyncio.Lock()
    with progress_bar(len(todo), "reference queries", disable=not progress) as advance:

        async def one(article: Article) -> None:
            try:
                record = await reference_record(article, context)
            except Exception as exc:
                if failures is None:
                    raise
                failures[article.name] = f"{type(exc).__name__}: {exc}"
                advance()
                return
            async with lock:
                payload.queries[article.name] = record
                _write_atomically(path, payload)
                advance()

        await asyncio.gather(*(one(a) for a in todo))
