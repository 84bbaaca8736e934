"""The web path of the corpus builder: article titles -> pages -> cited URLs -> downloads -> extracted texts
-> dataset.

``fetch`` (polite, bounded downloader), ``safety`` (http(s) only, internal addresses refused after DNS and
after every redirect), ``cache`` (on-disk results by URL: resumable builds), ``extract`` (trafilatura /
newspaper4k on downloaded HTML), ``types`` (the downloader's and the build's settings), ``crawl`` (per
article: the page, then each footnote's URLs until one gives text), ``manifest`` (an entry per URL, the
summary), ``build`` (the pipeline: crawl, dataset, output files). CLI: ``ruwikibench corpus build``.
"""

from ruwikibench.corpus_builder.web.build import BuildResult, build_corpus, build_corpus_async, read_titles
from ruwikibench.corpus_builder.web.cache import PageCache
from ruwikibench.corpus_builder.web.crawl import page_url
from ruwikibench.corpus_builder.web.extract import Extraction, decode_html, extract_text
from ruwikibench.corpus_builder.web.fetch import Fetcher
from ruwikibench.corpus_builder.web.manifest import BuildSummary, UrlRecord
from ruwikibench.corpus_builder.web.safety import AddressPolicy, BlockedAddress, UnsafeURL
from ruwikibench.corpus_builder.web.types import BuildError, BuildSettings, FetchResult, FetchSettings

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
