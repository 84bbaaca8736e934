"""``ruwikibench judge citations RUN``: citation faithfulness of every cited article of a run directory.

Texts: the lead and each section of every written article — ``articles/*/article.json`` of a ``write --batch``
run, ``article.json`` of a single ``write --out`` folder, or the ``written`` article of an external
``article`` run (``score-outputs --stage article``). A number's source text is the cited snippet the writer
read; for an external article, the dataset's text of the matched source (``--dataset``); a number with no text
counts as pointing at no source.

Results in the run directory: ``citations.jsonl`` (one line per support check, appended as it arrives: a rerun
asks only what is missing, errors again; answers come from the LLM response cache) and ``citations.json``
(per text: sentences with status, cited numbers, P(supported) and the best passage of each cited snippet; per
article and overall: counts and the three figures with bootstrap 95% CIs over sentences / citations). The
writer re-renders each of its articles' ``article.html`` with the sentences marked
(:mod:`ruwikibench.writer.citations`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ruwikibench.conf.config import CitationsConfig
from ruwikibench.dataset import Dataset
from ruwikibench.evaluators.citations import CitationScores, combine
from ruwikibench.evaluators.judges.citations import (
    RESULTS_JSON,
    RESULTS_JSONL,
    CheckRecord,
    CitedText,
    TextScore,
    judge_texts,
    score_cited_text,
    verdict_map,
)
from ruwikibench.evaluators.judges.rundir import JsonlWriter, RunError, read_jsonl, read_models, write_json
from ruwikibench.evaluators.stats import Estimate, bootstrap_ci
from ruwikibench.models.llm import LLM
from ruwikibench.nodes.written import WrittenArticle
from ruwikibench.prompts import PromptLibrary

ARTICLE_JSON = "article.json"


class CitedArticle(BaseModel):
    """A written article of the run and where it lives (``folder`` None = held in outputs.jsonl only)."""

    name: str
    article: WrittenArticle
    folder: Path | None = None
    snippet_texts: dict[str, str] = Field(default_factory=dict)


def _read_article_json(path: Path, name: str) -> CitedArticle:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        article = WrittenArticle.model_validate(data)
    except (OSError, json.JSONDecodeError, ValidationError) as exc:
        raise RunError(f"{path}: not a written article: {str(exc).splitlines()[0]}") from exc
    texts = {
        s["snippet_id"]: s.get("text", "")
        for s in data.get("sources") or []
        if isinstance(s, dict) and "snippet_id" in s
    }
    return CitedArticle(name=name, article=article, folder=path.parent, snippet_texts=texts)


def load_articles(run_dir: Path) -> list[CitedArticle]:
    """Every written article of a run directory (or of one ``write --out`` folder)."""
    if (run_dir / ARTICLE_JSON).is_file():
        single = _read_article_json(run_dir / ARTICLE_JSON, "")
        single.name = single.article.title
        return [single]
    found = [
        _read_article_json(p, p.parent.name) for p in sorted((run_dir / "articles").glob(f"*/{ARTICLE_JSON}"))
    ]
    if found:
        return found
    out = []
    for number, row in read_jsonl(run_dir / "outputs.jsonl"):
        written = (row.get("output") or {}).get("written") if row.get("stage") == "writer" else None
        if written is None:
            continue
        try:
            out.append(CitedArticle(name=str(row["article"]), article=WrittenArticle.model_validate(written)))
        except (KeyError, ValidationError) as exc:
            raise RunError(f"{run_dir / 'outputs.jsonl'}:{number}: not a written article: {exc}") from exc
    if not out:
        raise RunError(
            f"{run_dir}: no written article (articles/*/article.json, article.json, or article rows "
            "of an external run in outputs.jsonl)"
        )
    return out


def source_texts(item: CitedArticle, dataset: Dataset | None) -> dict[int, str]:
    """Number -> the text its marker stands for: the cited snippet, else the matched source in the dataset."""
    out: dict[int, str] = {}
    for citation in item.article.references:
        text = citation.text or item.snippet_texts.get(citation.snippet_id, "")
        if not text.strip() and dataset is not None and citation.source_id:
            snippets = sorted(dataset.snippets_of_source(citation.source_id), key=lambda s: s.index)
            text = "\n\n".join(s.text for s in snippets)
        out[citation.n] = text
    return out


def cited_texts(item: CitedArticle, dataset: Dataset | None = None) -> list[CitedText]:
    """The lead and each section with text, as texts to judge."""
    sources = source_texts(item, dataset)
    title = item.article.title
    texts = (
        [
            CitedText(
                article=item.name,
                item="lead",
                title=title,
                section="",
                text=item.article.lead,
                sources=sources,
            )
        ]
        if item.article.lead.strip()
        else []
    )
    texts += [
        CitedText(article=item.name, item=s.id, title=title, section=s.title, text=s.text, sources=sources)
        for s in item.article.sections
        if s.text.strip()
    ]
    return texts


def read_records(path: Path) -> list[CheckRecord]:
    """All records of the file, in file order."""
    return read_models(path, CheckRecord, "support check")


class JudgedCitations(BaseModel):
    """What :func:`judge_run_citations` wrote to citations.json (``summary``), with the articles and per-text
    scores behind it (the writer re-renders its articles' HTML with the sentences marked from them)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    summary: dict[str, Any]
    articles: list[CitedArticle]
    scores: list[TextScore]


async def judge_run_citations(
    run_dir: Path,
    llm: LLM,
    *,
    judge: str,
    options: CitationsConfig,
    prompts: PromptLibrary,
    dataset: Dataset | None = None,
    on_record: Callable[[CheckRecord], None] | None = None,
) -> JudgedCitations:
    """Judge what is missing, then write citations.json; returns the summary with the articles and scores."""
    articles = load_articles(run_dir)
    texts = [t for a in articles for t in cited_texts(a, dataset)]
    known = read_records(run_dir / RESULTS_JSONL)
    with JsonlWriter(run_dir / RESULTS_JSONL) as writer:

        def keep(record: CheckRecord) -> None:
            writer.write(record)
            if on_record is not None:
                on_record(record)

        new = await judge_texts(
            texts, llm, judge=judge, options=options, prompts=prompts, known=known, on_record=keep
        )
    scores = [
        score_cited_text(t, verdict_map(t, known + new, judge, options.threshold), options) for t in texts
    ]
    summary = summarize(scores, judge=judge, options=options)
    summary["checks_now"] = len(new)
    failed = sum(
        r.source == "error" for r in new
    )  # failed checks are asked again each session: all are in new
    summary["statuses"] = {"error": failed, "ok": sum(r.source != "error" for r in known + new)}
    summary["usage"] = llm.usage.as_dict()
    write_json(run_dir / RESULTS_JSON, summary)
    return JudgedCitations(summary=summary, articles=articles, scores=scores)


def estimates(scores: list[TextScore]) -> dict[str, Estimate]:
    """Bootstrap means: recall over judged cited sentences, precision over their citations, unsupported share
    over all sentences."""
    recall, precision, unsupported = [], [], []
    for score in scores:
        for s in score.sentences:
            unsupported.append(float(s.status == "uncited" and s.checkable))
            if s.status in ("supported", "unsupported"):
                recall.append(float(s.status == "supported"))
                precision += [float(v) for v in s.precise.values()]
    return {
        "citation_recall": bootstrap_ci(recall),
        "citation_precision": bootstrap_ci(precision),
        "unsupported_share": bootstrap_ci(unsupported),
    }


def summarize(scores: list[TextScore], *, judge: str, options: CitationsConfig) -> dict[str, Any]:
    """citations.json: options, overall and per-article counts and estimates, per-text details."""
    by_article: dict[str, list[TextScore]] = defaultdict(list)
    for score in scores:
        by_article[score.article].append(score)

    def block(group: list[TextScore]) -> dict[str, Any]:
        counts: CitationScores = combine(s.counts for s in group)
        return {
            "counts": counts.model_dump(),
            "metrics": counts.metrics(),
            "estimates": {k: v.model_dump() for k, v in estimates(group).items()},
        }

    return {
        "judge": judge,
        "options": options.model_dump(),
        "overall": block(scores),
        "articles": {name: block(group) for name, group in by_article.items()},
        "texts": [s.model_dump(mode="json") for s in scores],
    }
