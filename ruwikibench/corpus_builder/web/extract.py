"""Main-text extraction from already downloaded HTML: trafilatura and newspaper4k, alone or chained.

Neither extractor is ever allowed to touch the network: trafilatura gets the HTML string; newspaper4k gets
it through ``download(input_html=...)`` with ``fetch_images``, ``follow_meta_refresh`` and
``memorize_articles`` off (by default newspaper4k downloads every image of a page to pick the top image).
A chain (``"trafilatura,newspaper"``) tries each extractor in turn and keeps the first text of at least
``min_chars`` characters, else the longest text seen.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from pydantic import BaseModel

EXTRACTORS = ("trafilatura", "newspaper", "trafilatura-precision", "trafilatura-recall")
DEFAULT_CHAIN = ("trafilatura", "newspaper")

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_DECLARED_LANG = re.compile(
    r"<html[^>]*\slang\s*=\s*[\"']?[a-z]|<meta[^>]+(content-language|og:locale)[^>]+content\s*=\s*[\"']?[a-z]",
    re.IGNORECASE,
)
_SCRIPTS = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]*>")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[A-Za-z]")
_BLANKS = re.compile(r"[ \t\u00a0]+")
_MANY_NEWLINES = re.compile(r"\n{3,}")

logging.getLogger("trafilatura").setLevel(logging.ERROR)
logging.getLogger("newspaper").setLevel(logging.ERROR)


class Extraction(BaseModel):
    text: str
    extractor: str = ""
    tried: list[str] = []
    errors: list[str] = []

    @property
    def chars(self) -> int:
        return len(self.text)


def _try_decode(body: bytes, charset: str | None) -> str | None:
    if not charset:
        return None
    try:
        return body.decode(charset)
    except (LookupError, UnicodeDecodeError):
        return None


def decode_html(body: bytes, declared: str | None = None) -> str:
    """Bytes -> text: the HTTP charset, else the <meta> charset, else UTF-8, else a detected charset."""
    meta = _META_CHARSET.search(body[:4096])
    for charset in (declared, meta.group(1).decode("ascii", "ignore") if meta else None, "utf-8"):
        text = _try_decode(body, charset)
        if text is not None:
            return text
    from charset_normalizer import from_bytes

    best = from_bytes(body).best()
    return str(best) if best is not None else body.decode("utf-8", errors="replace")


def tidy(text: str) -> str:
    """Collapse runs of blanks, trim lines, keep paragraph breaks (at most one blank line)."""
    lines = [
        _BLANKS.sub(" ", line).strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    ]
    return _MANY_NEWLINES.sub("\n\n", "\n".join(lines)).strip()


def _trafilatura(html: str, url: str | None, precision: bool = False, recall: bool = False) -> str:
    import trafilatura

    text = trafilatura.extract(
        html,
        url=url,
        include_comments=False,
        include_tables=True,
        include_images=False,
        favor_precision=precision,
        favor_recall=recall,
    )
    return text or ""


def extract_trafilatura(html: str, url: str | None = None) -> str:
    return _trafilatura(html, url)


def extract_trafilatura_precision(html: str, url: str | None = None) -> str:
    return _trafilatura(html, url, precision=True)


def extract_trafilatura_recall(html: str, url: str | None = None) -> str:
    return _trafilatura(html, url, recall=True)


def declares_language(html: str) -> bool:
    """Whether the page states its language (``<html lang>``, Content-Language or og:locale meta)."""
    return bool(_DECLARED_LANG.search(html[:20_000]))


def guess_cyrillic(html: str) -> bool:
    """Whether the visible text has more Cyrillic than Latin letters (tags, scripts and styles removed)."""
    text = _TAGS.sub(" ", _SCRIPTS.sub(" ", html))
    return len(_CYRILLIC.findall(text)) > len(_LATIN.findall(text))


def extract_newspaper(html: str, url: str | None = None) -> str:
    """newspaper4k on the given HTML. The page's declared language picks the stopword list; a page that
    declares none is read as Russian when its text is mostly Cyrillic (newspaper's fallback is English, which
    finds no text at all on such pages), else as English."""
    from newspaper import Article, Config

    config = Config()
    config.fetch_images = False
    config.follow_meta_refresh = False
    config.memorize_articles = False
    config.max_text = 10_000_000
    if not declares_language(html) and guess_cyrillic(html):
        config.language = "ru"
    article = Article(url or "http://localhost/", config=config)
    article.download(input_html=html)
    article.parse()
    return article.text or ""


EXTRACTOR_FUNCTIONS: dict[str, Callable[[str, str | None], str]] = {
    "trafilatura": extract_trafilatura,
    "newspaper": extract_newspaper,
    "trafilatura-precision": extract_trafilatura_precision,
    "trafilatura-recall": extract_trafilatura_recall,
}


def parse_chain(spec: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """'trafilatura,newspaper' -> ('trafilatura', 'newspaper'); unknown names raise ValueError."""
    names = tuple(n.strip() for n in spec.split(",")) if isinstance(spec, str) else tuple(spec)
    unknown = [n for n in names if n not in EXTRACTOR_FUNCTIONS]
    if not names or unknown:
        raise ValueError(f"unknown extractor(s) {unknown or spec!r}; choose from {', '.join(EXTRACTORS)}")
    return names


def extract_text(
    html: str, url: str | None = None, chain: tuple[str, ...] = DEFAULT_CHAIN, min_chars: int = 1500
) -> Extraction:
    """Run the chain; first text with >= ``min_chars`` characters wins, else the longest one seen."""
    best = Extraction(text="")
    tried: list[str] = []
    errors: list[str] = []
    for name in chain:
        tried.append(name)
        try:
            text = tidy(EXTRACTOR_FUNCTIONS[name](html, url))
        except Exception as exc:  # noqa: BLE001 — odd HTML must not stop a build: recorded, next extractor tries
            errors.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
            text = ""
        if len(text) >= min_chars:
            return Extraction(text=text, extractor=name, tried=tried, errors=errors)
        if len(text) > len(best.text):
            best = Extraction(text=text, extractor=name)
    return Extraction(text=best.text, extractor=best.extractor, tried=tried, errors=errors)
