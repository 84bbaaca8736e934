"""What the outline metrics see of order and hierarchy, on the real sample: each article's reference outline
scored as generated output, then rearranged or padded, with the outline stage's own scoring.

    python bench/outline_structure.py [--config configs/local.yaml]

Per article with reference headings (the configured heading selection), the outline scored against its own
reference: the reference itself; shuffled (levels kept); flattened (reference order, one level); shuffled and
flattened; ten junk headings appended («Раздел 0: альфа», …); the next article's outline. Columns: structure
F1, heading F1, heading recall, entity precision (×100; — where the reference names no entity). Shuffles are
drawn from the article's name. Means over articles last. The embedder is the config's (configs/local.yaml:
e5-int8).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ruwikibench.conf.builtin_options import OutlineConfig
from ruwikibench.conf.loader import load_config
from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json
from ruwikibench.dataset import Article
from ruwikibench.evaluators.outline import FLAT_LEVEL, reference_outline, score_outline
from ruwikibench.graphs.outline import selection
from ruwikibench.models.embeddings import make_embedder

JUNK = [f"Раздел {n}: {word}" for n, word in enumerate(["альфа", "бета", "гамма", "дельта", "эпсилон"] * 2)]
PLANTS = ("reference", "shuffled", "flattened", "shuffled+flat", "junk appended", "next article")
KEYS = {"structure_f1": "structure F1", "f1": "F1", "recall": "R", "entity_precision": "entity P"}


def sample_file() -> Path:
    env = os.environ.get("RUWIKIBENCH_SAMPLE")
    if env:
        path = Path(env)
        return path if path.is_file() else path / "ruwikibench_articles.json"
    for parent in ROOT.parents:
        candidate = parent / "shared" / "data" / "ruwiki" / "ruwikibench_articles.json"
        if candidate.is_file():
            return candidate
    raise SystemExit("no RuWikiBench sample found: set RUWIKIBENCH_SAMPLE")


def plants(reference: list[tuple[int, str]], other: list[tuple[int, str]], seed: str) -> dict:
    shuffled = reference[:]
    random.Random(seed).shuffle(shuffled)
    return {
        "reference": reference,
        "shuffled": shuffled,
        "flattened": [(FLAT_LEVEL, t) for _, t in reference],
        "shuffled+flat": [(FLAT_LEVEL, t) for _, t in shuffled],
        "junk appended": [*reference, *[(FLAT_LEVEL, j) for j in JUNK]],
        "next article": other,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "local.yaml"))
    args = parser.parse_args()
    config = load_config(args.config)
    embedder = make_embedder(config.embedder)
    chosen = selection(config.options(OutlineConfig))
    articles: list[Article] = [
        a for a in import_ruwikibench_json(sample_file()).dataset.articles if reference_outline(a, chosen)
    ]
    print(f"embedder {config.embedder.id}; cells: " + " / ".join(KEYS.values()) + " (×100)")
    print("| article | " + " | ".join(PLANTS) + " |")
    print("|---" * (len(PLANTS) + 1) + "|")
    means: dict[str, dict[str, list[float]]] = {p: {k: [] for k in KEYS} for p in PLANTS}
    for n, article in enumerate(articles):
        other = reference_outline(articles[(n + 1) % len(articles)], chosen)
        cells = []
        for plant, outline in plants(reference_outline(article, chosen), other, article.name).items():
            metrics = score_outline(article, outline, embedder, chosen).metrics
            values = [metrics.get(k, float("nan")) for k in KEYS]
            for key, value in zip(KEYS, values, strict=True):
                means[plant][key].append(value)
            cells.append(" / ".join("—" if math.isnan(v) else f"{100 * v:.0f}" for v in values))
        print(f"| {article.name} | " + " | ".join(cells) + " |")
    print("| mean | " + " | ".join(" / ".join(mean(means[p][k]) for k in KEYS) for p in PLANTS) + " |")


def mean(values: list[float]) -> str:
    """×100 mean of the defined values, — when none is."""
    defined = [v for v in values if not math.isnan(v)]
    return f"{100 * statistics.fmean(defined):.1f}" if defined else "—"


if __name__ == "__main__":
    main()
