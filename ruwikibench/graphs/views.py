"""The article page's views of the built-in stages' records (each stage's ``article_view``): reference beside
generated, read from one run's captured records of one article (an ``ArticleRecords`` of
:mod:`ruwikibench.reporting.article_views`: ``article``, ``outputs``, ``results``, ``dataset``).

A view is a plain dict for the article template, told apart by ``kind``:

- ``pool``: the query and the ranked candidates, each marked relevant (the snippet belongs to the article) or
  not, with its BM25 rank and the judge's answer;
- ``headings``: the reference outline tree beside the generated one;
- ``section_texts``: per section, the reference text beside the generated text, the snippets it was written
  from.

Generated section text is split into ``segments`` ({text, mark, note}); a score record may carry
``info["sentences"]`` ([{text, supported, note}], e.g. from a citation check) and the page then marks each
sentence supported or unsupported. Without it every paragraph is one unmarked segment.
"""

from __future__ import annotations

from typing import Any

SNIPPET_CHARS = 400


def pool_view(records: Any) -> dict[str, Any]:
    output = records.outputs[0]["output"] if records.outputs else {}
    snippets = {s.id: s for s in records.dataset.snippets} if records.dataset is not None else {}
    candidates = []
    for candidate in sorted(output.get("candidates") or [], key=lambda c: c.get("rank", 0)):
        snippet = snippets.get(candidate["snippet_id"])
        candidates.append(
            {
                "rank": candidate.get("rank"),
                "bm25_rank": candidate.get("bm25_rank"),
                "snippet_id": candidate["snippet_id"],
                "relevant": None if snippet is None else snippet.article == records.article,
                "llm_score": candidate.get("llm_score"),
                "answer": candidate.get("answer"),
                "judged_by": candidate.get("source"),
                "text": (snippet.text[:SNIPPET_CHARS] if snippet is not None else ""),
            }
        )
    relevant_total = sum(s.article == records.article for s in snippets.values()) if snippets else None
    return {
        "kind": "pool",
        "query": output.get("query", ""),
        "query_mode": output.get("query_mode", ""),
        "error": output.get("error"),
        "candidates": candidates,
        "relevant_total": relevant_total,
        "relevance_known": bool(snippets),
    }


def headings_view(records: Any) -> dict[str, Any]:
    output = records.outputs[0]["output"] if records.outputs else {}
    unit_input = records.outputs[0]["input"] if records.outputs else {}
    reference: list[dict[str, Any]] = []
    if records.dataset is not None and records.article in {a.name for a in records.dataset.articles}:
        root = records.dataset.article(records.article).root
        reference = [{"level": s.level, "title": s.title} for s in root.walk()]  # the title is level 1
    else:
        reference = [{"level": 2, "title": h} for h in unit_input.get("headings") or []]
    generated = [
        {"level": h.get("level", 2), "title": h.get("title", "")} for h in output.get("outline") or []
    ]
    return {
        "kind": "headings",
        "reference": reference,
        "generated": generated,
        "dropped": output.get("dropped") or [],
        "k": output.get("k"),
        "k_method": output.get("k_method"),
    }


def segments(text: str, info: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The generated text as marked sentences (when a check left ``info['sentences']``) or unmarked
    paragraphs."""
    sentences = (info or {}).get("sentences")
    if sentences:
        return [
            {
                "text": s.get("text", ""),
                "mark": "supported" if s.get("supported") else "unsupported",
                "note": s.get("note", ""),
            }
            for s in sentences
        ]
    return [{"text": p, "mark": None, "note": ""} for p in text.split("\n\n") if p.strip()]


def section_texts_view(records: Any) -> dict[str, Any]:
    results = {r.item: r for r in records.results}
    sections = []
    for row in records.outputs:
        produced = {r["id"]: r for r in row["output"].get("results") or []}
        for spec in row["input"].get("sections") or []:
            result = produced.get(spec["id"], {})
            score = results.get(spec["id"])
            snippet_text = {s["id"]: s["text"] for s in spec.get("snippets") or []}
            sections.append(
                {
                    "id": spec["id"],
                    "title": spec.get("title", ""),
                    "level": spec.get("level", 2),
                    "reference": spec.get("reference") or "",
                    "generated": segments(result.get("text", ""), score.info if score else None),
                    "status": result.get("status", "missing"),
                    "excluded": score.excluded if score else None,
                    "sources": [
                        {"id": i, "text": snippet_text.get(i, "")[:SNIPPET_CHARS]}
                        for i in result.get("snippet_ids") or []
                    ],
                }
            )
    return {"kind": "section_texts", "sections": sections}
