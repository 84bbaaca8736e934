"""Score a written article against the dataset's reference article with the stage evaluators.

Records use the benchmark's stage names, so a writer run's ``metrics.json`` has the same ``outline`` and
``sections`` keys (and columns) as a benchmark run and ``ruwikibench report`` can put them side by side:

- ``outline``: heading P/R/F1 and entity R/P/F1 of the written outline against the reference outline (stage-2
  evaluator);
- ``sections``: each reference section with text against the best-matching written section (cosine of
  whole-text embeddings; the reference lead against the written lead), sentence-embedding P/R/F1, ROUGE-L,
  BLEU, entity R/P/F1 (stage-3 evaluators);
- ``article``: the whole written text against the whole reference text (sentence-embedding P/R/F1, ROUGE-L),
  and how much of what was selected and cited comes from the article's own sources.
"""

from __future__ import annotations

from typing import Any

from ruwikibench.conf.builtin_options import OutlineConfig, SectionsConfig
from ruwikibench.dataset import Article, Dataset
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import GeneratedText, ScoreRecord
from ruwikibench.stage.metric import Metric
from ruwikibench.writer.models import WrittenArticle

WRITER_TABLES = ("outline", "sections", "writer")  # the stages whose tables a written article's records fill

ARTICLE_METRICS = (
    Metric(
        key="f1",
        label="Article F1",
        description="sentence F1 of the whole article against the reference article (embedding matching)",
        kind="embedding",
        vs_baselines=True,
    ),
    Metric(
        key="rouge_l",
        label="Article ROUGE-L",
        description="ROUGE-L F of the whole article against the reference article",
        kind="lexical",
        vs_baselines=True,
    ),
    Metric(key="p", label="P", description="sentence precision of the whole article", kind="embedding"),
    Metric(key="r", label="R", description="sentence recall of the whole article", kind="embedding"),
    Metric(
        key="source_precision",
        label="Source precision",
        description="share of the selected snippets that come from the article's own sources",
        kind="ranking",
    ),
    Metric(
        key="source_recall",
        label="Source recall",
        description="share of the article's own snippets that were selected",
        kind="ranking",
    ),
    Metric(
        key="cited_own_share",
        label="Cited own share",
        description="share of the cited snippets that come from the article's own sources",
        kind="statistic",
    ),
)
"""The writer table's metrics (whole-article records); its outline and sections records use those stages'.
Compared with the baseline: article F1 and ROUGE-L (the source columns are not: the extractive baseline is
given the article's own sources)."""


def writer_outputs(name: str, title: str, output: dict[str, Any]) -> list[dict[str, Any]]:
    """outputs.jsonl's records of one article written or scored as a whole (``write --batch``,
    ``score-outputs --stage writer``): one per table. The writer's carries the writer stage's unit input (the
    title), so its no-LLM baselines are built and scored for the article as for ``run stage writer``; the
    outline and sections records carry none (their floors come from the writer's ``run_floors``)."""
    return [
        {
            "stage": stage,
            "article": name,
            "unit": "article",
            **({"input": {"title": title}} if stage == "writer" else {}),
            "output": output,
        }
        for stage in WRITER_TABLES
    ]


def reference_text(article: Article) -> str:
    return "\n\n".join(s.text() for s in article.sections() if s.text().strip())


def score_outline_record(article: Article, written: WrittenArticle, context: StageContext) -> ScoreRecord:
    from ruwikibench.evaluators.outline import score_outline
    from ruwikibench.graphs.outline import selection

    record = ScoreRecord(stage="outline", article=article.name, item="article", info={"mode": "writer"})
    if not article.root.children:
        return record.model_copy(update={"excluded": "reference outline has no sections"})
    scored = score_outline(
        article,
        [(i.level, i.title) for i in written.outline],
        context.embedder,
        selection(context.config.options(OutlineConfig)),
        context.config.embedder.authors_prompt,
    )
    return record.model_copy(update={"metrics": scored.metrics, "info": {**record.info, **scored.info}})


def best_matches(
    reference: list[str], generated: list[str], context: StageContext
) -> list[tuple[int, float]]:
    """For each reference text, the index of the most similar generated text (whole-text cosine) and the
    cosine."""
    import numpy as np

    if not reference or not generated:
        return []
    vectors = context.embedder.embed(reference + generated, "symmetric")
    sims = np.asarray(vectors[: len(reference)], dtype=np.float64) @ np.asarray(vectors[len(reference) :]).T
    return [(int(np.argmax(row)), float(np.max(row))) for row in sims]


def text_metrics(text: str, reference: str, context: StageContext) -> dict[str, float]:
    from ruwikibench.evaluators.entities import KEYS as ENTITY_KEYS
    from ruwikibench.evaluators.text_scores import HEADLINE, section_scores

    metrics = section_scores(
        text, reference, context.embedder, tokenize=context.config.options(SectionsConfig).bleu_tokenize
    )
    return {key: metrics[key] for key in (*HEADLINE, *ENTITY_KEYS) if key in metrics}


def score_section_records(
    article: Article, written: WrittenArticle, context: StageContext
) -> list[ScoreRecord]:
    """Every reference section against its best-matching written section (lead against lead)."""
    from ruwikibench.nodes.citations import strip_markers

    bodies = [(s, strip_markers(s.text)[0]) for s in written.sections if s.text.strip()]
    lead = strip_markers(written.lead)[0]
    refs = [s for s in article.sections() if s.level > 1 and s.text().strip()]
    matches = best_matches([s.text() for s in refs], [b for _, b in bodies], context)
    records: list[ScoreRecord] = []
    for section in article.sections():
        record = ScoreRecord(
            stage="sections",
            article=article.name,
            item=section.id,
            info={"mode": "writer", "title": section.title, "level": section.level},
        )
        reference = section.text()
        if not reference.strip():
            records.append(record.model_copy(update={"excluded": "no reference text"}))
            continue
        info: dict[str, Any]
        if section.level == 1:
            text, info = lead, {"matched": "lead"}
        elif matches:
            index, cosine = matches[refs.index(section)]
            text = bodies[index][1]
            info = {
                "matched": bodies[index][0].id,
                "matched_title": bodies[index][0].title,
                "match_cosine": round(cosine, 4),
            }
        else:
            text, info = "", {"matched": None}
        metrics = text_metrics(text, reference, context)
        records.append(record.model_copy(update={"metrics": metrics, "info": {**record.info, **info}}))
    return records


def source_metrics(
    article: Article, written: WrittenArticle, selected: list[str], dataset: Dataset
) -> dict[str, float]:
    """Share of selected / cited snippets from the article's own sources, and share of its snippets
    selected."""
    own = {s.id for s in dataset.snippets_of(article.name)}
    cited = [c.snippet_id for c in written.references]
    metrics = {"source_recall": len(own & set(selected)) / len(own) if own else 0.0}
    if selected:
        metrics["source_precision"] = sum(1 for s in selected if s in own) / len(selected)
    if cited:
        metrics["cited_own_share"] = sum(1 for s in cited if s in own) / len(cited)
    return metrics


def score_article_record(
    article: Article, written: WrittenArticle, selected: list[str], context: StageContext
) -> ScoreRecord:
    from ruwikibench.evaluators.lexical import rouge_l
    from ruwikibench.evaluators.similarity import sentence_prf

    record = ScoreRecord(stage="writer", article=article.name, item="article", info={"mode": "writer"})
    reference = reference_text(article)
    if not reference.strip():
        return record.model_copy(update={"excluded": "no reference text"})
    text = written.plain_text()
    metrics: dict[str, float] = {"p": 0.0, "r": 0.0, "f1": 0.0, "rouge_l": 0.0}
    if text.strip():
        metrics = sentence_prf(text, reference, context.embedder)
        metrics["rouge_l"] = rouge_l(text, reference)["f"]
    assert context.dataset is not None
    metrics.update(source_metrics(article, written, selected, context.dataset))
    for key in ("markers_kept", "markers_removed", "references", "sections_with_text", "sources_selected"):
        if key in written.stats:
            metrics[key] = float(written.stats[key])
    return record.model_copy(update={"metrics": metrics})


def score_written(
    article: Article, written: WrittenArticle, selected: list[str], context: StageContext
) -> list[ScoreRecord]:
    return [
        score_outline_record(article, written, context),
        *score_section_records(article, written, context),
        score_article_record(article, written, selected, context),
    ]


def generated_texts(
    article: Article, written: WrittenArticle, records: list[ScoreRecord]
) -> list[GeneratedText]:
    """The written texts paired with the reference texts they were scored against (for reports and judges)."""
    from ruwikibench.nodes.citations import strip_markers
    from ruwikibench.writer.outline_file import outline_markdown

    by_id = {s.id: s for s in written.sections}
    texts = [
        GeneratedText(
            stage="outline",
            article=article.name,
            item="article",
            title=article.title,
            text=outline_markdown(article.title, written.outline),
            reference="\n".join(f"{'#' * s.level} {s.title}" for s in article.sections() if s.level > 1),
        ),
    ]
    for record in records:
        if record.stage != "sections" or record.excluded:
            continue
        matched = record.info.get("matched")
        if matched == "lead":
            text = written.lead
        elif matched in by_id:
            text = by_id[matched].text
        else:
            continue
        section = article.section(record.item)
        texts.append(
            GeneratedText(
                stage="sections",
                article=article.name,
                item=record.item,
                title=section.title,
                text=strip_markers(text)[0],
                reference=section.text(),
            )
        )
    texts.append(
        GeneratedText(
            stage="writer",
            article=article.name,
            item="article",
            title=article.title,
            text=written.plain_text(),
            reference=reference_text(article),
        )
    )
    return texts
