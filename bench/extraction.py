"""Extraction quality and speed per extractor on the saved web pages (../shared/data/web).

For every page of ``expectations.json``: the share of its ``with`` strings found in the extracted text and
the share of its ``without`` strings (menus, footers, banners) absent from it; whitespace is collapsed on
both sides before matching. Also: pages whose text reaches the builder's 1500-character filter, and the
extraction time (single thread, after a warm-up call).

    /work/venv/bin/python bench/extraction.py [--data DIR] [--extractors a,b,"a,b"] [--per-page] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ruwikibench.corpus_builder.web.extract import decode_html, extract_text, parse_chain

DEFAULT_SPECS = [
    "newspaper",
    "trafilatura",
    "trafilatura-precision",
    "trafilatura-recall",
    "trafilatura,newspaper",
    "newspaper,trafilatura",
]
_WS = re.compile(r"\s+")


def default_data_dir() -> Path:
    env = os.environ.get("RUWIKIBENCH_WEB")
    if env:
        return Path(env)
    for ancestor in Path(__file__).resolve().parents[1:]:  # the repo root's parent, or further up (worktrees)
        if (ancestor / "shared" / "data" / "web").is_dir():
            return ancestor / "shared" / "data" / "web"
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "web"


def norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


@dataclass
class Page:
    url: str
    file: str
    html: str
    with_: list[str]
    without: list[str]


def load_pages(data: Path) -> list[Page]:
    expectations = json.loads((data / "expectations.json").read_text(encoding="utf-8"))
    return [
        Page(
            url,
            item["file"],
            decode_html((data / "pages" / item["file"]).read_bytes()),
            item["with"],
            item["without"],
        )
        for url, item in expectations.items()
    ]


def run(spec: str, pages: list[Page], min_chars: int) -> dict[str, Any]:
    """Figures of one extractor (or chain) over all pages."""
    chain = parse_chain(spec)
    extract_text("<html><body><p>warm up</p></body></html>", None, chain, min_chars)
    started = time.perf_counter()
    extractions = [extract_text(p.html, p.url, chain, min_chars) for p in pages]
    seconds = time.perf_counter() - started
    found = want = avoided = avoid = long_enough = 0
    per_page = []
    for page, extraction in zip(pages, extractions, strict=True):
        text = norm(extraction.text)
        hits = sum(norm(s) in text for s in page.with_)
        clean = sum(norm(s) not in text for s in page.without)
        found, want = found + hits, want + len(page.with_)
        avoided, avoid = avoided + clean, avoid + len(page.without)
        long_enough += extraction.chars >= min_chars
        per_page.append(
            {
                "file": page.file,
                "with": f"{hits}/{len(page.with_)}",
                "without": f"{clean}/{len(page.without)}",
                "chars": extraction.chars,
                "extractor": extraction.extractor,
            }
        )
    return {
        "extractor": spec,
        "with_found": found,
        "with_total": want,
        "without_avoided": avoided,
        "without_total": avoid,
        "pages": len(pages),
        "pages_over_min_chars": long_enough,
        "seconds": round(seconds, 2),
        "per_page": per_page,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument(
        "--extractors",
        nargs="*",
        default=DEFAULT_SPECS,
        help='extractor names or comma-separated chains, e.g. newspaper "trafilatura,newspaper"',
    )
    parser.add_argument("--min-chars", type=int, default=1500)
    parser.add_argument("--per-page", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not (args.data / "expectations.json").exists():
        sys.exit(f"{args.data}/expectations.json not found (set --data or RUWIKIBENCH_WEB)")
    pages = load_pages(args.data)
    rows = [run(spec, pages, args.min_chars) for spec in args.extractors]
    print(f"{len(pages)} pages from {args.data}; min_chars={args.min_chars}\n")
    print(f"{'extractor':26} {'with found':>16} {'without avoided':>18} {'>=min_chars':>12} {'seconds':>8}")
    for r in rows:
        w = f"{r['with_found']}/{r['with_total']} ({r['with_found'] / r['with_total']:.1%})"  # type: ignore[operator]
        wo = f"{r['without_avoided']}/{r['without_total']} ({r['without_avoided'] / r['without_total']:.1%})"  # type: ignore[operator]
        print(f"{r['extractor']:26} {w:>16} {wo:>18} {r['pages_over_min_chars']:>12} {r['seconds']:>8}")
        if args.per_page:
            for p in r["per_page"]:  # type: ignore[union-attr]
                print(
                    f"    {p['file']:48} with {p['with']:>5} without "
                    f"{p['without']:>5} chars {p['chars']:>6} {p['extractor']}"
                )
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
