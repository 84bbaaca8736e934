"""BM25 index build, save, load and query time and memory at 10k / 100k / 1M synthetic Russian snippets.

Each synthetic snippet has 600 words drawn from the word frequencies of the real dataset's sources (so the
vocabulary and its Zipf tail are Russian text's). The index is the project's own
(``bm25_build.build_retriever``, what ``BM25Index.build`` calls: folded tokens, stopwords removed, pymorphy3
lemmas — each distinct word lemmatised once; worker processes from 40k snippets). The texts are generated in
blocks while the index is built (``build_s`` includes generating them; ``generate_s`` is the generation
alone), so 1M texts never sit in memory at once. Every size runs in its own process so the peak memory is that
size's.

    python bench/bm25_scale.py --dataset ../shared/data/ruwiki/ruwikibench_articles.json --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORD = re.compile(r"\w+")


def vocabulary(dataset_spec: str) -> tuple[list[str], list[int]]:
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset

    dataset, _ = resolve_dataset(dataset_spec)
    counts = collections.Counter(w for s in dataset.sources for w in WORD.findall(s.text))
    words, weights = zip(*counts.most_common(), strict=True)
    return list(words), list(weights)


def synthetic_texts(words: list[str], weights: list[int], size: int, words_per_snippet: int, seed: int = 0):
    """``size`` texts of ``words_per_snippet`` words drawn from the word frequencies, generated in blocks."""
    import numpy as np

    rng = np.random.default_rng(seed)
    p = np.asarray(weights, dtype=np.float64) / sum(weights)
    vocabulary_array = np.asarray(words, dtype=object)
    for start in range(0, size, 4000):
        picks = rng.choice(len(words), size=(min(4000, size - start), words_per_snippet), p=p)
        yield from (" ".join(row) for row in vocabulary_array[picks].tolist())


def one_size(dataset_spec: str, size: int, words_per_snippet: int, queries: int) -> dict[str, float]:
    import numpy as np

    from ruwikibench.retrieval.bm25 import BM25Index
    from ruwikibench.retrieval.bm25_build import build_retriever
    from ruwikibench.retrieval.normalize import Normalizer

    words, weights = vocabulary(dataset_spec)
    started = time.perf_counter()
    for _ in synthetic_texts(words, weights, size, words_per_snippet):
        pass
    generate = time.perf_counter() - started
    started = time.perf_counter()
    retriever = build_retriever(
        synthetic_texts(words, weights, size, words_per_snippet), Normalizer("lemma"), n_texts=size
    )
    build = time.perf_counter() - started
    index = BM25Index(retriever, [f"s{i}" for i in range(size)], "lemma", "synthetic")
    folder = Path(tempfile.mkdtemp(prefix="bm25-scale-"))
    started = time.perf_counter()
    index.save(folder)
    save = time.perf_counter() - started
    started = time.perf_counter()
    loaded = BM25Index.load(folder)
    load = time.perf_counter() - started
    rng = np.random.default_rng(1)
    p = np.asarray(weights, dtype=np.float64) / sum(weights)
    texts = [" ".join(words[j] for j in rng.choice(len(words), size=40, p=p)) for _ in range(queries)]
    started = time.perf_counter()
    for text in texts:
        loaded.search(text, 300)
    query = (time.perf_counter() - started) / queries
    disk = sum(f.stat().st_size for f in folder.iterdir())
    return {
        "snippets": size,
        "generate_s": round(generate, 1),
        "build_s": round(build, 1),
        "save_s": round(save, 2),
        "load_s": round(load, 3),
        "query_ms": round(query * 1000, 1),
        "index_mb_on_disk": round(disk / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--words", type=int, default=600)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_size(args.dataset, args.one, args.words, args.queries)))
        return
    for size in args.sizes:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--dataset",
                args.dataset,
                "--one",
                str(size),
                "--words",
                str(args.words),
                "--queries",
                str(args.queries),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            print(
                f"{size}: "
                f"failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"
            )
            continue
        print(out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
