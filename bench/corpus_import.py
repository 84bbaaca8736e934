"""Time the corpus pipeline on the real sample: parse every page once, full import, save, load.

Usage: python bench/corpus_import.py [PATH/ruwikibench_articles.json]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from ruwikibench.corpus_builder import import_records, load_dataset, parse_article_html, save_dataset

DEFAULT = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ruwiki" / "ruwikibench_articles.json"
)


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not path.is_file():
        path = Path("/work/shared/data/ruwiki/ruwikibench_articles.json")
    t0 = time.perf_counter()
    records = json.loads(path.read_text(encoding="utf-8"))
    t1 = time.perf_counter()
    for r in records:
        parse_article_html(r["html"], r["article_name"])
    t2 = time.perf_counter()
    result = import_records(records, path)
    t3 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        save_dataset(result.dataset, tmp)
        t4 = time.perf_counter()
        loaded = load_dataset(tmp)
        t5 = time.perf_counter()
    html_mb = sum(len(r["html"]) for r in records) / 1e6
    print(f"file: {path} ({len(records)} articles, {html_mb:.1f} M characters of HTML)")
    print(f"read JSON        {t1 - t0:6.2f} s")
    print(f"parse pages once {t2 - t1:6.2f} s  ({(t2 - t1) / len(records) * 1000:.0f} ms per page)")
    print(f"full import      {t3 - t2:6.2f} s  (parse + filters + snippets)")
    print(f"save             {t4 - t3:6.2f} s")
    print(f"load + verify    {t5 - t4:6.2f} s  equal={loaded == result.dataset}")
    ds = result.dataset
    print(
        f"articles={len(ds.articles)} sources={len(ds.sources)} "
        f"snippets={len(ds.snippets)} id={ds.dataset_id}"
    )


if __name__ == "__main__":
    main()
