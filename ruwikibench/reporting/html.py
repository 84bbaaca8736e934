"""The HTML report: ``report.html`` (the paper-layout tables with CIs, charts, settings, failures and
exclusions, the article index and, for several runs, per-article deltas) and one page per article under
``articles/`` (reference beside generated, each item's scores, the node trace and timeline of every unit).

Everything a page needs is inside it (CSS, the sorting script, charts as data URIs): no request at view time.
The runs are read by :mod:`~ruwikibench.reporting.data`; what each page shows is put together by
:mod:`~ruwikibench.reporting.page` and :mod:`~ruwikibench.reporting.article_page` (the tables' numbers come
from :mod:`ruwikibench.reporting.tables`); this module renders the templates and writes the files.
"""

from __future__ import annotations

import math
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ruwikibench.dataset import Dataset
from ruwikibench.reporting.article_page import article_context
from ruwikibench.reporting.data import Run, RunData
from ruwikibench.reporting.failures import short_reason
from ruwikibench.reporting.item_csv import write_item_csvs
from ruwikibench.reporting.page import report_context
from ruwikibench.reporting.paired import PairedRow
from ruwikibench.reporting.paper import PaperBlock
from ruwikibench.reporting.tables import report_stages
from ruwikibench.storage.durable import write_atomic

TEMPLATES = Path(__file__).parent / "templates"
ARTICLES_DIR = "articles"


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    env.filters["signed"] = _signed
    env.filters["short"] = short_reason
    return env


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


def write_html_report(
    runs: list[Run],
    out: Path,
    view: str,
    charts: dict[str, Path],
    paired: dict[str, list[PairedRow]] | None = None,
    paper: dict[str, PaperBlock] | None = None,
) -> Path:
    """Write ``out/report.html``, ``out/articles/aNNNN.html`` and ``out/<stage>_items.csv`` (each item's
    scores, linked from the stage's section); returns report.html. ``paired``: the stages'
    paired differences (:func:`ruwikibench.reporting.paired_comparison`), shown after each stage's table;
    ``paper``: the paper's reference rows per stage (:func:`ruwikibench.reporting.compare.paper_blocks`)."""
    datasets: dict[str, tuple[Dataset | None, str]] = {}
    data = [RunData.load(run, datasets) for run in runs]
    stages = report_stages([r.metrics for r in data])
    articles = sorted(set().union(*(r.articles() for r in data)))
    pages = {article: f"{ARTICLES_DIR}/a{index:04d}.html" for index, article in enumerate(articles, 1)}
    env = environment()
    (out / ARTICLES_DIR).mkdir(parents=True, exist_ok=True)
    for index, article in enumerate(articles):
        context = article_context(data, stages, article, articles, index, pages)
        write_atomic(out / pages[article], env.get_template("article.html.j2").render(**context))
    context = report_context(data, stages, view, charts, articles, pages, paired or {}, paper or {})
    item_csvs = write_item_csvs(data, stages, out)
    for block in context["stages"]:
        block["items_csv"] = item_csvs.get(block["name"])
    write_atomic(
        out / "report.html", env.get_template("report.html.j2").render(**context)
    )  # secrets redacted
    return out / "report.html"
