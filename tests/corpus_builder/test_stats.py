from __future__ import annotations

from ruwikibench.corpus_builder.stats import dataset_stats
from ruwikibench.dataset import Article, Dataset, Paragraph, Section, Snippet, Source


def _dataset() -> Dataset:
    p = lambda n, cite: Paragraph(text=" ".join(["w"] * n), citations=[cite])
    a = Article(
        title="A",
        name="A",
        root=Section(
            id="s0",
            level=1,
            title="A",
            paragraphs=[p(10, "f1")],
            children=[
                Section(
                    id="s1",
                    level=2,
                    title="x",
                    paragraphs=[p(20, "f1"), p(30, "f1")],
                    children=[Section(id="s2", level=3, title="y", paragraphs=[p(5, "f1")])],
                ),
                Section(
                    id="s3",
                    level=2,
                    title="z",
                    children=[Section(id="s4", level=3, title="q", paragraphs=[p(1, "f1")])],
                ),
            ],
        ),
    )
    b = Article(title="B", name="B", root=Section(id="s0", level=1, title="B", paragraphs=[p(4, "g")]))
    sources = [
        Source(id="A/1", article="A", footnote_id="f1", text="t"),
        Source(id="A/2", article="A", footnote_id="unmapped-2", text="t"),
        Source(id="B/1", article="B", footnote_id="g", text="t"),
    ]
    snippets = [
        Snippet(
            id=f"{s.id}#0", article=s.article, source_id=s.id, index=0, text="t", word_start=0, word_end=1
        )
        for s in sources
    ]
    return Dataset(articles=[a, b], sources=sources, snippets=snippets)


def test_table1_rows_hand_computed() -> None:
    stats = dataset_stats(_dataset())
    assert (stats.articles, stats.sources, stats.snippets) == (2, 3, 3)
    assert stats.mean_outline_headings == 2.0  # A: 4 headings, B: 0
    # sections with text: A lead 10, x 50, y 5, q 1; B lead 4 -> 70 / 5
    assert stats.mean_section_words == 14.0
    assert stats.paragraphs == 6
    assert stats.sources_uncited == 1
    assert stats.mean_h2_headings == 1.0
    a = stats.per_article[0]
    assert (a.headings, a.h2_headings, a.max_depth, a.sections_with_text, a.words) == (4, 2, 3, 4, 66)
    assert [m for m, _ in stats.table1_rows()] == [
        "Number of articles",
        "Number of sources",
        "Total number of snippets",
        "Average outline size (headings)",
        "Average section size (words)",
    ]
    assert stats.table1_rows()[4] == ("Average section size (words)", "14.0")


def test_empty_dataset() -> None:
    stats = dataset_stats(Dataset(articles=[], sources=[], snippets=[]))
    assert stats.mean_outline_headings == 0.0 and stats.mean_section_words == 0.0


def test_real_sample_figures(imported) -> None:  # type: ignore[no-untyped-def]
    ds = imported.dataset
    stats = dataset_stats(ds)
    assert stats.articles == 8
    assert stats.sources == len(ds.sources) and stats.snippets == len(ds.snippets)
    # independent recount of the outline size from the reports
    assert stats.mean_outline_headings == sum(r.headings_kept for r in imported.reports) / 8
    assert sum(r.sources_uncited for r in imported.reports) == stats.sources_uncited
