"""Read STORM (knowledge-storm, ``STORMWikiRunner``) output folders into the external ``article`` format.

STORM writes one folder per topic under its ``output_dir``, named ``topic.replace(" ", "_").replace("/",
"_")`` cut to 125 characters (``truncate_filename``). Each folder holds (``storm_wiki/engine.py``):

- ``storm_gen_outline.txt``: the outline, ``#`` = a top section (the topic itself is not a line; older runs
  may open with ``# topic``);
- ``storm_gen_article.txt``: the draft, ``# Section`` / ``## Subsection`` headings with texts, ``[n]``
  markers;
- ``storm_gen_article_polished.txt``: the same after polishing, opening with ``# summary`` (the lead);
- ``url_to_info.json``: ``{"url_to_unified_index": {url: n}, "url_to_info": {url: {"url", "title",
  "description", "snippets", "meta", "citation_uuid"}}}`` — the ``[n]`` of the article is
  ``url_to_unified_index[url]``.

The polished article is read when present, else the draft; the outline file is the outline scored (STORM's
outline stage; the article may drop empty sections of it). ``url_to_info.json`` numbers the draft's markers:
the polished article's renumbered markers are mapped back to the draft's numbers through the text both files
share (:mod:`ruwikibench.external.storm_citations`); a polished number that cannot be mapped has no entry in
the sources map and is counted as an unresolved marker. Missing files are one clear error naming folder and
file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ruwikibench.dataset import Article, Dataset
from ruwikibench.external.article import split_markdown
from ruwikibench.external.formats import ExternalFormatError
from ruwikibench.external.storm_citations import MarkerMap, map_polished

OUTLINE = "storm_gen_outline.txt"
ARTICLE = "storm_gen_article.txt"
POLISHED = "storm_gen_article_polished.txt"
URL_TO_INFO = "url_to_info.json"
MAX_NAME = 125
LEAD_HEADINGS = ("summary",)


def storm_folder_name(topic: str) -> str:
    """STORM's folder name for a topic (``STORMWikiRunner.run``: spaces and slashes -> '_', cut to 125)."""
    return topic.replace(" ", "_").replace("/", "_")[:MAX_NAME]


def topic_folders(root: Path) -> list[Path]:
    if not root.is_dir():
        raise ExternalFormatError(f"{root}: not a directory of STORM topic folders")
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    if not folders:
        raise ExternalFormatError(f"{root}: holds no topic folder")
    return folders


def match_folder(folder: Path, dataset: Dataset) -> Article:
    """The dataset article whose STORM folder name (or file-safe name) is this folder's name."""
    name = folder.name
    for article in dataset.articles:
        if name in (storm_folder_name(article.title), storm_folder_name(article.name), article.name):
            return article
    wanted = name.replace("_", " ").casefold()
    same = [a for a in dataset.articles if a.title.casefold() == wanted]
    if len(same) == 1:
        return same[0]
    raise ExternalFormatError(f"{folder}: topic {name.replace('_', ' ')!r} is not an article of the dataset")


def read_url_to_info(path: Path) -> dict[str, int]:
    """url -> citation number from STORM's ``url_to_info.json``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExternalFormatError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno})") from exc
    index = data.get("url_to_unified_index") if isinstance(data, dict) else None
    if not isinstance(index, dict):
        raise ExternalFormatError(
            f"{path}: field 'url_to_unified_index': missing or not an object of url -> n"
        )
    numbers: dict[str, int] = {}
    for url, n in index.items():
        if not isinstance(n, int) or isinstance(n, bool):
            raise ExternalFormatError(
                f"{path}: field 'url_to_unified_index.{url}': {n!r} is not a citation number"
            )
        numbers[url] = n
    return numbers


def storm_outline(title: str, text: str) -> str:
    """STORM's outline file as Markdown headings one level deeper under '# title' (a leading topic line
    dropped)."""
    _, blocks = split_markdown(text)
    if blocks and blocks[0][0] == 1 and blocks[0][1].replace("_", " ").strip().casefold() == title.casefold():
        blocks = blocks[1:]
    return (
        "\n".join([f"# {title}", *[f"{'#' * min(level + 1, 6)} {heading}" for level, heading, _ in blocks]])
        + "\n"
    )


def storm_markdown(title: str, text: str) -> str:
    """STORM's plain-text article as the external Markdown: '# title', the lead (the polished article's
    '# summary' section), then every heading one level deeper ('# Section' -> '## Section')."""
    head, blocks = split_markdown(text)
    lead_parts = [head] if head else []
    if blocks and blocks[0][0] == 1 and blocks[0][1].strip().casefold() in LEAD_HEADINGS:
        lead_parts.append(blocks[0][2])
        blocks = blocks[1:]
    parts = [f"# {title}", *[p for p in lead_parts if p]]
    for level, heading, body in blocks:
        parts.append(f"{'#' * min(level + 1, 6)} {heading}")
        if body:
            parts.append(body)
    return "\n\n".join(parts) + "\n"


def read_topic(folder: Path, dataset: Dataset) -> dict[str, Any]:
    """One topic folder as an ``article`` row (plus provenance fields)."""
    article = match_folder(folder, dataset)
    for required in (OUTLINE, URL_TO_INFO):
        if not (folder / required).is_file():
            raise ExternalFormatError(
                f"{folder}: missing {required} (a STORM topic folder holds {OUTLINE}, "
                f"{ARTICLE} or {POLISHED}, and {URL_TO_INFO})"
            )
    text_file = folder / POLISHED if (folder / POLISHED).is_file() else folder / ARTICLE
    if not text_file.is_file():
        raise ExternalFormatError(f"{folder}: missing {POLISHED} and {ARTICLE} (the generated article)")
    numbers = read_url_to_info(folder / URL_TO_INFO)
    text = text_file.read_text(encoding="utf-8")
    row: dict[str, Any] = {
        "article": article.title,
        "markdown": storm_markdown(article.title, text),
        "outline": storm_outline(article.title, (folder / OUTLINE).read_text(encoding="utf-8")),
        "storm_folder": folder.name,
        "storm_file": text_file.name,
    }
    by_number = {n: url for url, n in sorted(numbers.items(), key=lambda item: item[1])}
    if text_file.name == POLISHED:
        markers = polished_markers(folder, text)
        row["sources"] = {str(p): by_number[d] for p, d in markers.mapped.items() if d in by_number}
        row["storm_markers"] = markers.model_dump()
    else:
        row["sources"] = {str(n): url for n, url in by_number.items()}
    recorded = read_snippets(folder / URL_TO_INFO)
    row["source_snippets"] = {n: recorded[url] for n, url in row["sources"].items() if recorded.get(url)}
    return row


def polished_markers(folder: Path, polished: str) -> MarkerMap:
    """The polished article's numbers mapped to the draft's (every number unresolved without the draft)."""
    draft = folder / ARTICLE
    return map_polished(polished, draft.read_text(encoding="utf-8") if draft.is_file() else "")


def read_snippets(path: Path) -> dict[str, list[str]]:
    """url -> the snippets STORM recorded for it (``url_to_info[url].snippets``; empty when absent)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    info = data.get("url_to_info") if isinstance(data, dict) else None
    out: dict[str, list[str]] = {}
    for url, entry in (info or {}).items():
        snippets = entry.get("snippets") if isinstance(entry, dict) else None
        if isinstance(snippets, list):
            out[url] = [s for s in snippets if isinstance(s, str) and s.strip()]
    return out


def storm_rows(root: Path, dataset: Dataset) -> list[dict[str, Any]]:
    """Every topic folder under ``root`` as an ``article`` row, in folder-name order."""
    rows = [read_topic(folder, dataset) for folder in topic_folders(root)]
    seen: dict[str, str] = {}
    for row in rows:
        if row["article"] in seen:
            raise ExternalFormatError(
                f"{root}: folders {seen[row['article']]!r} and {row['storm_folder']!r} are "
                f"both the article {row['article']!r}"
            )
        seen[row["article"]] = row["storm_folder"]
    return rows


def write_rows(rows: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path
