from __future__ import annotations

import base64
import urllib.parse

import pytest

from ruwikibench.corpus_builder.html_parser import (
    NoArticleBody,
    decode_gateway_href,
    parse_article_html,
    primary_url,
)
from ruwikibench.dataset import Reference
from tests.corpus_builder._html import h, mark, page, reflist

# --------------------------------------------------------------------------- synthetic pages


def test_lead_and_nesting_h2_h3_h4() -> None:
    body = (
        "<p>Лид.</p>"
        + h(2, "А")
        + "<p>a1</p>"
        + h(3, "А.1")
        + "<p>a11</p>"
        + h(4, "А.1.x")
        + "<p>x</p>"
        + h(3, "А.2")
        + "<p>a2</p>"
        + h(2, "Б")
        + "<p>b</p>"
    )
    art = parse_article_html(page(body), "Статья")
    assert art.root.level == 1 and art.root.title == "Статья"
    assert [p.text for p in art.root.paragraphs] == ["Лид."]
    assert art.h2_titles() == ["А", "Б"]
    a = art.root.children[0]
    assert [c.title for c in a.children] == ["А.1", "А.2"]
    assert [(c.level, c.title) for c in a.children[0].children] == [(4, "А.1.x")]
    assert [s.level for s in art.sections()] == [1, 2, 3, 4, 3, 2]


def test_heading_edit_links_are_not_part_of_the_title() -> None:
    art = parse_article_html(page(h(2, "История") + "<p>t</p>"), "X")
    assert art.h2_titles() == ["История"]


def test_duplicate_heading_titles_stay_apart() -> None:
    body = h(2, "Критика") + "<p>один</p>" + h(2, "Критика") + "<p>два</p>"
    art = parse_article_html(page(body), "X")
    first, second = art.root.children
    assert first.title == second.title == "Критика"
    assert first.id != second.id
    assert [first.text(), second.text()] == ["один", "два"]
    ids = [s.id for s in art.sections()]
    assert len(ids) == len(set(ids))
    assert art.section(second.id).text() == "два"


def test_single_and_adjacent_footnote_marks() -> None:
    body = (
        f"<p>Факт{mark('cite_note-5', '5')}. "
        f"Два факта{mark('cite_note-a-6', '6')}{mark('cite_note-7', '7')}.</p>"
    )
    art = parse_article_html(page(body), "X")
    (p,) = art.root.paragraphs
    assert p.text == "Факт. Два факта."
    assert p.citations == ["cite_note-5", "cite_note-a-6", "cite_note-7"]
    assert p.notes == []


def test_repeated_mark_is_listed_once_in_order() -> None:
    body = f"<p>a{mark('cite_note-2', '2')} b{mark('cite_note-1', '1')} c{mark('cite_note-2', '2')}</p>"
    (p,) = parse_article_html(page(body), "X").root.paragraphs
    assert p.citations == ["cite_note-2", "cite_note-1"]


def test_explanatory_notes_are_kept_apart_from_citations() -> None:
    body = (
        f"<p>Текст{mark('cite_note-n1', 'прим. 1')} и ещё{mark('cite_note-3', '3')}"
        f"{mark('cite_note-k', 'К 2')}.</p>"
        + h(2, "Примечания")
        + reflist(
            ("cite_note-n1", "Пояснение."), ("cite_note-3", "Источник."), ("cite_note-k", "Комментарий.")
        )
    )
    art = parse_article_html(page(body), "X")
    (p,) = art.root.paragraphs
    assert p.citations == ["cite_note-3"]
    assert p.notes == ["cite_note-n1", "cite_note-k"]
    notes = {r.id: r.is_note for r in art.references}
    assert notes == {"cite_note-n1": True, "cite_note-3": False, "cite_note-k": True}


def test_percent_encoded_footnote_href_is_decoded() -> None:
    href = "#cite_note-" + urllib.parse.quote("Мосгорздрав") + "-2"
    body = f'<p>т<sup class="reference"><a href="{href}">[2]</a></sup></p>'
    (p,) = parse_article_html(page(body), "X").root.paragraphs
    assert p.citations == ["cite_note-Мосгорздрав-2"]


def test_service_sections_and_their_subsections_are_excluded() -> None:
    body = (
        h(2, "Раздел")
        + "<p>r</p>"
        + h(2, "См. также")
        + "<p>s</p>"
        + h(2, "Примечания")
        + h(3, "Комментарии")
        + "<p>c</p>"
        + h(2, "Литература")
        + "<p>l</p>"
        + h(2, "Ссылки")
        + "<p>l</p>"
        + h(2, "External links")
    )
    art = parse_article_html(page(body), "X")
    assert art.h2_titles() == ["Раздел"]
    assert [s.title for s in art.sections()] == ["X", "Раздел"]


def test_content_after_a_service_section_is_read_again() -> None:
    body = h(2, "См. также") + "<p>s</p>" + h(2, "После") + "<p>p</p>"
    assert parse_article_html(page(body), "X").h2_titles() == ["После"]


def test_lists_ignored_by_default_and_kept_on_request() -> None:
    body = (
        "<p>Симптомы:</p>"
        f"<ul><li>жар{mark('cite_note-1', '1')}</li><li>кашель{mark('cite_note-2', '2')}</li></ul>"
        "<table><tr><td><p>в таблице</p></td></tr></table>"
    )
    ignored = parse_article_html(page(body), "X")
    assert [p.text for p in ignored.root.paragraphs] == ["Симптомы:"]
    kept = parse_article_html(page(body), "X", lists="keep")
    assert [p.text for p in kept.root.paragraphs] == ["Симптомы:", "жар\nкашель"]
    assert kept.root.paragraphs[1].citations == ["cite_note-1", "cite_note-2"]


def test_quotes_are_read_styles_and_editorial_marks_are_not() -> None:
    body = (
        "<p>Начало<style>.mw-parser-output .x{margin:0}</style> конец"
        '<sup class="noprint">[<i>источник не указан</i>]</sup>.</p>'
        '<div class="ts-Цитата"><blockquote><p>Цитата.</p></blockquote></div>'
        '<div class="thumb"><p>подпись</p></div>'
    )
    art = parse_article_html(page(body), "X")
    assert [p.text for p in art.root.paragraphs] == ["Начало конец.", "Цитата."]


def test_newer_wikipedia_heading_wrappers() -> None:
    body = (
        '<div class="mw-heading mw-heading2"><h2 id="Hist">History</h2><span class="mw-editsection">'
        "[edit]</span></div><p>text</p>"
    )
    art = parse_article_html(page(body), "X")
    assert art.h2_titles() == ["History"]
    assert art.root.children[0].text() == "text"


def test_title_and_name_default_to_the_page_heading() -> None:
    art = parse_article_html(page("<p>t</p>", title='A: "b"?'))
    assert art.title == 'A: "b"?'
    assert art.name == "A b"


@pytest.mark.parametrize("html", ["", "   ", "<html><body><p>no body</p></body></html>"])
def test_page_without_article_body_raises(html: str) -> None:
    with pytest.raises(NoArticleBody):
        parse_article_html(html, "X")


# --------------------------------------------------------------------------- external-gateway links


def test_gateway_href_decodes_with_and_without_known_prefix() -> None:
    url = "https://example.org/путь?q=1&r=2"
    payload = base64.b64encode(urllib.parse.quote(url, safe="").encode()).decode()
    assert decode_gateway_href("#HeGW" + payload, "HeGW") == url
    assert decode_gateway_href("#HeGW" + payload) == url
    assert decode_gateway_href("#XY" + base64.b64encode(b"http://a.b/c").decode()) == "http://a.b/c"
    assert decode_gateway_href("#cite_note-5") is None


def test_reference_urls_decode_gateway_links() -> None:
    url = "https://journal.example/view/7"
    payload = base64.b64encode(urllib.parse.quote(url, safe="").encode()).decode()
    label = (
        f'Автор. <a rel="nofollow" class="external text external-gateway" href="#HeGW{payload}">Статья</a>'
        ' <a class="external text" href="https://web.archive.org/web/1/x">Архивировано</a>'
    )
    head = '<script>RLCONF={"gatewayHashPrefix":"HeGW"};</script>'
    art = parse_article_html(page(h(2, "Примечания") + reflist(("cite_note-1", label)), head=head), "X")
    (ref,) = art.references
    assert ref.urls == [url, "https://web.archive.org/web/1/x"]
    assert ref.label == "Автор. Статья Архивировано"
    assert primary_url(ref) == url


def test_primary_url_prefers_a_non_archive_link() -> None:
    ref = Reference(id="r", urls=["https://web.archive.org/web/2/https://a.ru/x", "https://a.ru/x"])
    assert primary_url(ref) == "https://a.ru/x"
    assert primary_url(Reference(id="r")) is None


# ---------------------------------------------------------------- the real sample (facts read from the pages)


def test_real_python_h2_headings(sample_html: dict[str, str]) -> None:
    art = parse_article_html(sample_html["Python"], "Python")
    assert art.h2_titles() == [
        "История",
        "Концепция и философия",
        "Портируемость",
        "Типы и структуры данных",
        "Синтаксис и семантика",
        "Парадигмы программирования",
        "Возможности",
        "Библиотеки",
        "Примеры программ",
        "Профилирование и оптимизация кода",
        "Сравнение с другими языками",
        "Критика",
        "Реализации",
        "Специализированные подмножества/расширения Python",
        "Инструменты поддержки программирования",
        "Применение",
    ]
    # 39 h3 on the page, two of them (Комментарии, Источники) inside the service section Примечания
    assert sum(1 for s in art.sections() if s.level == 3) == 37


def test_real_crimea_lead_cites_footnotes_1_and_2(sample_html: dict[str, str]) -> None:
    title = "Присоединение Крыма к Российской Федерации"
    art = parse_article_html(sample_html[title], title)
    lead = art.root.paragraphs[0]
    assert lead.text.startswith("Присоединение Крыма к Российской Федерации — вхождение в состав")
    assert lead.citations == ["cite_note-1", "cite_note-2"]
    assert "[" not in lead.text


def test_real_covid_lead_adjacent_marks_and_gateway_url(sample_html: dict[str, str]) -> None:
    art = parse_article_html(sample_html["COVID-19"], "COVID-19")
    lead = art.root.paragraphs[0]
    # "...лёгкого течения[6][7], так и в тяжёлой форме[8]." on the page
    assert "лёгкого течения, так и в тяжёлой форме." in lead.text
    i = lead.citations.index("cite_note-:9-6")
    assert lead.citations[i : i + 3] == ["cite_note-:9-6", "cite_note-:7-7", "cite_note-8"]
    assert lead.citations[0] == "cite_note-Мосгорздрав-2"
    ref = next(r for r in art.references if r.id == "cite_note-:2-11")
    assert ref.urls[0] == "https://journal.pulmonology.ru/pulm/article/view/1315"  # external-gateway, decoded
    assert not any("HeGW" in u for r in art.references for u in r.urls)
    assert "Примечания" not in art.h2_titles() and "См. также" not in art.h2_titles()


def test_real_tomb_raider_lead_note_is_not_a_citation(sample_html: dict[str, str]) -> None:
    title = "Tomb Raider (игра, 2013)"
    art = parse_article_html(sample_html[title], title)
    lead = art.root.paragraphs[0]
    # the page: "... Cryptids[К 2]. ... (англ. A survivor is born)[18]." and an inline <style> block
    assert lead.citations == ["cite_note-taglain-20"]
    assert lead.notes == ["cite_note-19"]
    assert "mw-parser-output" not in lead.text
    notes = {r.id for r in art.references if r.is_note}
    assert {"cite_note-12", "cite_note-19"} <= notes
    assert "cite_note-taglain-20" not in notes
