"""The web path of the corpus builder: article titles -> pages -> cited URLs -> downloads -> extracted texts -> dataset.

``fetch`` (polite, bounded downloader), ``safety`` (http(s) only, internal addresses refused after DNS and after
every redirect), ``cache`` (on-disk results by URL: resumable builds), ``extract`` (trafilatura / newspaper4k on
downloaded HTML), ``build`` (the pipeline, URL manifest, summary). CLI: ``ruwikibench corpus build``.
"""

from ruwikibench.corpus_builder.web.build import (
    BuildError,
    BuildResult,
    BuildSettings,
    BuildSummary,
    UrlRecord,
    build_corpus,
    build_corpus_async,
    page_url,
    read_titles,
)
from ruwikibench.corpus_builder.web.cache import PageCache
from ruwikibench.corpus_builder.web.extract import Extraction, decode_html, extract_text
from ruwikibench.corpus_builder.web.fetch import Fetcher
from ruwikibench.corpus_builder.web.safety import AddressPolicy, BlockedAddress, UnsafeURL
from ruwikibench.corpus_builder.web.types import FetchResult, FetchSettings

__all__ = [
    "AddressPolicy",
    "BlockedAddress",
    "BuildError",
    "BuildResult",
    "BuildSettings",
    "BuildSummary",
    "Extraction",
    "FetchResult",
    "FetchSettings",
    "Fetcher",
    "PageCache",
    "UnsafeURL",
    "UrlRecord",
    "build_corpus",
    "build_corpus_async",
    "decode_html",
    "extract_text",
    "page_url",
    "read_titles",
]
