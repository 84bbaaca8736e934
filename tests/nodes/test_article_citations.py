"""Citation markers: parsing, out-of-range removal, global renumbering, reference entries (hand-computed
cases)."""

from __future__ import annotations

from ruwikibench.dataset import Article, Dataset, Reference, Section, Snippet, Source
from ruwikibench.nodes.citations import (
    Numbering,
    SectionDraft,
    Shown,
    cited_numbers,
    marker_numbers,
    numbered_block,
    restrict_markers,
    rewrite_markers,
    strip_markers,
)


def test_marker_numbers_lists_and_ranges() -> None:
    assert marker_numbers("1") == [1]
    assert marker_numbers("1, 3") == [1, 3]
    assert marker_numbers("2;4") == [2, 4]
    assert marker_numbers("2-4") == [2, 3, 4]
    assert marker_numbers("2–4, 7") == [2, 3, 4, 7]
    assert marker_numbers("1-90") == [1, 90]  # absurd range: only its ends


def test_cited_numbers_first_appearance_order() -> None:
    assert cited_numbers("a [3] b [1][3] c [2, 1] d") == [3, 1, 2]
    assert cited_numbers("no markers, [a] [] [x1]") == []


def test_rewrite_removes_out_of_range_and_counts() -> None:
    text, stats = rewrite_markers("Факт [1]. Другой [9]. Оба [1, 9].", lambda n: [n * 10] if n == 1 else None)
    assert text == "Факт [10]. Другой. Оба [10]."
    assert (stats.kept, stats.removed, stats.removed_numbers) == (2, 2, [9, 9])


def test_restrict_and_strip() -> None:
    assert restrict_markers("a [1] b [2][3].", {2})[0] == "a b [2]."
    text, stats = strip_markers("a [1] b [2].")
    assert text == "a b." and stats.removed == 2


def test_numbering_is_global_in_first_citation_order() -> None:
    numbering = Numbering()
    first = numbering.section(
        SectionDraft(
            section_id="s1",
            text="A [2]. B [1]. C [2]. D [5].",
            shown=[Shown(n=1, snippet_ids=["x#0"]), Shown(n=2, snippet_ids=["y#0", "y#1"])],
        )
    )
    second = numbering.section(
        SectionDraft(
            section_id="s2",
            text="E [1]. F [2].",
            shown=[Shown(n=1, snippet_ids=["z#0"]), Shown(n=2, snippet_ids=["x#0"])],
        )
    )
    # s1: local 2 -> y#0, y#1 -> 1, 2; local 1 -> x#0 -> 3; local 5 was never shown -> removed
    assert first.text == "A [1][2]. B [3]. C [1][2]. D."
    assert first.cited == [1, 2, 3] and first.markers.removed == 1
    assert first.shown_snippets == ["x#0", "y#0", "y#1"]
    # s2: z#0 is new -> 4; x#0 keeps its number 3
    assert second.text == "E [4]. F [3]."
    assert numbering.number_of == {"y#0": 1, "y#1": 2, "x#0": 3, "z#0": 4}


def test_same_input_same_numbers() -> None:
    def run() -> dict[str, int]:
        numbering = Numbering()
        numbering.section(
            SectionDraft(
                section_id="s",
                text="[2] [1]",
                shown=[Shown(n=1, snippet_ids=["a"]), Shown(n=2, snippet_ids=["b"])],
            )
        )
        return numbering.number_of

    assert run() == run() == {"b": 1, "a": 2}


def _dataset() -> Dataset:
    root = Section(id="s0", level=1, title="T")
    article = Article(
        title="T",
        name="T",
        root=root,
        references=[Reference(id="cite_note-1", urls=["https://e.x/a"], label="Автор. Книга")],
    )
    source = Source(id="T/1", article="T", footnote_id="cite_note-1", text="x" * 10, url="https://e.x/a")
    snippet = Snippet(
        id="T/1#2", article="T", source_id="T/1", index=2, text="текст фрагмента", word_start=0, word_end=2
    )
    return Dataset(articles=[article], sources=[source], snippets=[snippet])


def test_references_carry_url_label_and_text() -> None:
    numbering = Numbering()
    numbering.section(
        SectionDraft(
            section_id="s",
            text="x [1] y [2]",
            shown=[Shown(n=1, snippet_ids=["T/1#2"]), Shown(n=2, snippet_ids=["other#0"])],
        )
    )
    refs = numbering.references(_dataset())
    assert [r.n for r in refs] == [1, 2]
    assert (refs[0].url, refs[0].label, refs[0].text, refs[0].source_id) == (
        "https://e.x/a",
        "Автор. Книга",
        "текст фрагмента",
        "T/1",
    )
    assert (refs[1].url, refs[1].label, refs[1].source_id) == (None, "", "other")


def test_numbered_block() -> None:
    block = numbered_block([(1, "первый  текст"), (2, "второй " * 50)], chars=30)
    lines = block.split("\n\n")
    assert lines[0] == "[1] первый текст"
    assert lines[1].startswith("[2] второй") and lines[1].endswith("…") and len(lines[1]) <= 4 + 30 + 2


def test_lone_marker_lines_join_the_next_text_line_or_the_previous_one() -> None:
    from ruwikibench.nodes.citations import attach_lone_markers

    # the local model's real pattern: the material number on its own line before the item it sources
    text = "[1]\n\n2. Компьютер купила «Гугл».\n\n[1]\n\n3. Он стоил 10 млн долларов.\n\n[2]"
    assert attach_lone_markers(text) == (
        "2. Компьютер купила «Гугл». [1]\n\n3. Он стоил 10 млн долларов. [1] [2]"
    )
    assert attach_lone_markers("Факт [3].\n[3]") == "Факт [3]."  # nothing after; the previous line has it
    assert attach_lone_markers("[1][2]\nТекст.") == "Текст. [1][2]"
    assert attach_lone_markers("Текст без маркеров.\n\nЕщё [4].") == "Текст без маркеров.\n\nЕщё [4]."
    assert attach_lone_markers("[5]") == "[5]"  # no text to attach to: left as it is
    assert attach_lone_markers("Текст\n.\nЕщё.") == "Текст\n.\nЕщё."  # punctuation without a marker stays
