from __future__ import annotations

from ruwikibench.corpus_builder.filters import (
    filter_article,
    filter_sources,
    prune_headings,
    source_is_long_enough,
)
from ruwikibench.dataset import Article, Paragraph, Section, Source


def src(footnote: str, chars: int, stem: str | None = None) -> Source:
    return Source(id=f"A/{stem or footnote}", article="A", footnote_id=footnote, text="x" * chars)


def test_source_length_threshold_is_inclusive_at_1500_and_ignores_surrounding_blanks() -> None:
    assert source_is_long_enough(src("f", 1500))
    assert not source_is_long_enough(src("f", 1499))
    padded = Source(id="A/p", article="A", footnote_id="f", text="\n  " + "x" * 1499 + "  \n")
    assert not source_is_long_enough(padded)
    assert [s.id for s in filter_sources([src("a", 10), src("b", 2000)])] == ["A/b"]
    assert [s.id for s in filter_sources([src("a", 10), src("b", 2000)], min_chars=5)] == ["A/a", "A/b"]


def _article() -> Article:
    p = lambda text, *cites: Paragraph(text=text, citations=list(cites))
    root = Section(
        id="s0",
        level=1,
        title="A",
        paragraphs=[p("lead", "n1")],
        children=[
            Section(id="s1", level=2, title="Kept", paragraphs=[p("k1", "n1", "n9"), p("k2", "n9")]),
            Section(
                id="s2",
                level=2,
                title="Parent",
                children=[
                    Section(id="s3", level=3, title="Child", paragraphs=[p("c", "n2")]),
                    Section(id="s4", level=3, title="Empty child", paragraphs=[p("e", "n9")]),
                ],
            ),
            Section(
                id="s5",
                level=2,
                title="Gone",
                paragraphs=[p("g")],
                children=[
                    Section(id="s6", level=3, title="Gone too", paragraphs=[p("g2", "short")]),
                ],
            ),
        ],
    )
    return Article(title="A", name="A", root=root)


def test_paragraphs_citing_no_kept_source_and_empty_headings_are_dropped() -> None:
    kept = [src("n1", 2000, "source_1"), src("n2", 3000, "source_2")]
    article, report = filter_article(_article(), kept)
    assert [(s.id, s.title) for s in article.sections()] == [
        ("s0", "A"),
        ("s1", "Kept"),
        ("s2", "Parent"),
        ("s3", "Child"),
    ]
    assert [p.text for p in article.section("s1").paragraphs] == ["k1"]
    assert article.section("s2").paragraphs == []  # stays: a subsection survives
    assert article.source_ids == ["A/source_1", "A/source_2"]
    assert (report.paragraphs_in, report.paragraphs_dropped) == (7, 4)
    assert (report.headings_in, report.headings_dropped) == (6, 3)


def test_root_stays_even_when_everything_is_filtered() -> None:
    article, _ = filter_article(_article(), [])
    assert article.sections() == [Section(id="s0", level=1, title="A")]


def test_prune_is_bottom_up() -> None:
    leaf = Section(id="c", level=4, title="leaf", paragraphs=[Paragraph(text="t")])
    tree = Section(
        id="a", level=2, title="a", children=[Section(id="b", level=3, title="b", children=[leaf])]
    )
    pruned = prune_headings(tree)
    assert pruned is not None and [s.id for s in pruned.walk()] == ["a", "b", "c"]
    assert (
        prune_headings(Section(id="a", level=2, title="a", children=[Section(id="b", level=3, title="b")]))
        is None
    )


def test_filters_do_not_mutate_the_input() -> None:
    original = _article()
    before = original.model_dump()
    filter_article(original, [])
    assert original.model_dump() == before
