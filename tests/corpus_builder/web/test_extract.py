from __future__ import annotations

import json
import re

import pytest

from ruwikibench.corpus_builder.web import extract
from ruwikibench.corpus_builder.web.extract import decode_html, extract_text, parse_chain, tidy
from tests.sample import shared_data


def test_decode_html_charsets() -> None:
    text = "<html><head><meta charset='windows-1251'></head><body>Новости дня</body></html>"
    assert "Новости дня" in decode_html(text.encode("cp1251"))
    assert "Новости" in decode_html("<p>Новости</p>".encode("koi8-r"), declared="koi8-r")
    assert decode_html("<p>Новости</p>".encode()) == "<p>Новости</p>"
    undeclared = (
        "<html><body><p>"
        + "Это длинный русский текст без объявленной кодировки. " * 20
        + "</p></body></html>"
    )
    assert "русский текст" in decode_html(undeclared.encode("cp1251"))


def test_tidy_keeps_paragraph_breaks() -> None:
    assert tidy("  a \t b \n\n\n\n c\u00a0 d  \r\n e ") == "a b\n\nc d\ne"


@pytest.mark.parametrize("name", ["trafilatura", "newspaper"])
def test_extractors_keep_article_drop_boilerplate(name: str, make_article) -> None:  # type: ignore[no-untyped-def]
    html = make_article("Квантовые вычисления", paragraphs=10)
    result = extract_text(html, "https://news.example/q", chain=(name,), min_chars=100)
    assert result.extractor == name
    assert "Абзац 3 статьи «Квантовые вычисления»" in result.text
    assert "Все права защищены" not in result.text
    assert result.chars > 1500


async def test_newspaper_never_fetches_images(server, make_article) -> None:  # type: ignore[no-untyped-def]
    image = server.page("/big.jpg", b"\xff\xd8\xff" + b"0" * 100, "image/jpeg")
    imgs = "".join(f"<img src='{image}?n={i}' width='800' height='600'>" for i in range(5))
    html = make_article("Картинки", extra=imgs).replace(
        "<head>",
        f"<head><meta property='og:image' content='{image}'><meta "
        f"http-equiv='refresh' content='0;url={image}'>",
    )
    result = extract_text(html, server.url("/article"), chain=("newspaper",))
    assert "Абзац 1" in result.text
    assert server.total == 0


def test_chain_falls_back_and_keeps_longest(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake(text: str):  # type: ignore[no-untyped-def]
        def run(html: str, url: str | None) -> str:
            calls.append(text)
            if text == "boom":
                raise ValueError("bad html")
            return text

        return run

    monkeypatch.setitem(extract.EXTRACTOR_FUNCTIONS, "a", fake("short"))
    monkeypatch.setitem(extract.EXTRACTOR_FUNCTIONS, "b", fake("long enough text"))
    monkeypatch.setitem(extract.EXTRACTOR_FUNCTIONS, "c", fake("boom"))
    won = extract_text("<html></html>", chain=("a", "b"), min_chars=10)
    assert (won.text, won.extractor, won.tried) == ("long enough text", "b", ["a", "b"])
    calls.clear()
    first = extract_text("<html></html>", chain=("b", "a"), min_chars=10)
    assert first.extractor == "b" and calls == ["long enough text"]  # the fallback is not run when not needed
    short = extract_text("<html></html>", chain=("c", "a"), min_chars=100)
    assert (short.text, short.extractor) == ("short", "a")
    assert short.errors == ["c: ValueError: bad html"]


def test_parse_chain() -> None:
    assert parse_chain("trafilatura, newspaper") == ("trafilatura", "newspaper")
    with pytest.raises(ValueError, match="goose"):
        parse_chain("goose")


WEB = shared_data("web")


@pytest.mark.skipif(WEB is None, reason="../shared/data/web (saved pages with expectations) not found")
def test_default_chain_on_real_pages() -> None:
    """The default chain finds >= 90 % of the expected strings and avoids >= 90 % of the boilerplate ones
    on the 40 saved pages (bench/extraction.py measured 113/119 and 115/120)."""
    assert WEB is not None
    expectations = json.loads((WEB / "expectations.json").read_text(encoding="utf-8"))
    found = want = avoided = avoid = 0

    def norm(s: str) -> str:
        return re.sub(r"\s+", " ", s).strip()

    for url, item in expectations.items():
        html = decode_html((WEB / "pages" / item["file"]).read_bytes())
        text = norm(extract_text(html, url).text)
        found += sum(norm(s) in text for s in item["with"])
        avoided += sum(norm(s) not in text for s in item["without"])
        want, avoid = want + len(item["with"]), avoid + len(item["without"])
    assert found / want >= 0.9 and avoided / avoid >= 0.9


def test_newspaper_reads_undeclared_cyrillic_page_as_russian(make_article) -> None:  # type: ignore[no-untyped-def]
    """newspaper falls back to English stopwords and then finds no text on a Russian page without a lang
    tag."""
    html = make_article("Без языка", paragraphs=8).replace(" lang='ru'", "")
    assert not extract.declares_language(html) and extract.guess_cyrillic(html)
    assert extract.declares_language(make_article("С языком"))
    assert not extract.guess_cyrillic("<html><body><p>English text only, привет</p></body></html>")
    assert "Абзац 2 статьи «Без языка»" in extract.extract_newspaper(html)
