"""Entity metrics measured: the NER against the hand-labelled sentences, its CPU cost, and the metric on the
real sample (each reference against itself and against another article's reference).

    python bench/entities.py [--snippets 12]

* labelled: micro P / R of the NER's typed mentions (exact spans) and of the normalized forms the metric
  matches, against tests/evaluators/data/entities_ru.jsonl;
* cost: model load (CPU s), then ``--snippets`` real source snippets (≈600 words) run through the NER with no
  cache: CPU and wall seconds per snippet;
* sample: entity recall / precision of each article's whole reference text, its sections (those naming an
  entity) and its headings, against itself and against the next article's (the wrong article).

The sample is ``$RUWIKIBENCH_SAMPLE``, else shared/data/ruwiki beside the checkout or one of its parents.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json
from ruwikibench.dataset import Article
from ruwikibench.evaluators import entities
from ruwikibench.evaluators.entities import entity_scores, extract_entities, headings_text, normalize_entity
from ruwikibench.evaluators.outline import reference_headings

LABELLED = ROOT / "tests" / "evaluators" / "data" / "entities_ru.jsonl"


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


def prf(true_pos: int, predicted: int, gold: int) -> str:
    return f"P {true_pos / predicted:.3f}  R {true_pos / gold:.3f}  ({gold} gold, {predicted} predicted)"


def labelled() -> None:
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]
    typed = [0, 0, 0]
    normal = [0, 0, 0]
    for row in rows:
        found = extract_entities(row["text"])
        gold = {(t, s) for t, s in row["entities"]}
        pred = {(e.type, e.text) for e in found}
        gold_n, pred_n = {normalize_entity(s) for _, s in row["entities"]}, {e.normal for e in found}
        for counts, g, p in ((typed, gold, pred), (normal, gold_n, pred_n)):
            counts[0] += len(g & p)
            counts[1] += len(p)
            counts[2] += len(g)
    print(f"labelled: {len(rows)} sentences")
    print(f"  typed exact spans  {prf(*typed)}")
    print(f"  normalized forms   {prf(*normal)}")


def cost(snippets: list[str]) -> None:
    start = time.process_time()
    entities.ner_model()
    print(f"model load: {time.process_time() - start:.2f} s CPU")
    entities.forget_in_memory()
    cpu, wall = time.process_time(), time.perf_counter()
    found = sum(len(extract_entities(s)) for s in snippets)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    words = statistics.mean(len(s.split()) for s in snippets)
    print(
        f"cost: {len(snippets)} snippets of {words:.0f} words on average, {found} entities: "
        f"{cpu / len(snippets) * 1000:.0f} ms CPU, {wall / len(snippets) * 1000:.0f} ms wall per snippet"
    )


def article_text(article: Article) -> str:
    return "\n\n".join(s.text() for s in article.sections() if s.text().strip())


def row(name: str, own: list[dict[str, float]], wrong: list[dict[str, float]]) -> None:
    def mean(scores: list[dict[str, float]], key: str) -> str:
        values = [s[key] for s in scores if key in s]
        return f"{statistics.mean(values):.3f} (n={len(values)})" if values else "—"

    print(
        f"  {name:9} own R {mean(own, 'entity_recall')}  wrong-article R {mean(wrong, 'entity_recall')}  "
        f"P {mean(wrong, 'entity_precision')}  F1 {mean(wrong, 'entity_f1')}"
    )


def sample(articles: list[Article]) -> None:
    pairs = list(zip(articles, [*articles[1:], articles[0]], strict=True))
    print(f"sample: {len(articles)} articles, each against itself and against the next one")
    texts = [(article_text(a), article_text(b)) for a, b in pairs]
    row("article", [entity_scores(t, t) for t, _ in texts], [entity_scores(o, t) for t, o in texts])
    own, wrong = [], []
    for article, other in pairs:
        others = [s.text() for s in other.sections() if s.text().strip()]
        for i, section in enumerate(s for s in article.sections() if s.text().strip()):
            own.append(entity_scores(section.text(), section.text()))
            wrong.append(entity_scores(others[i % len(others)], section.text()))
    row("sections", own, wrong)
    heads = [(headings_text(reference_headings(a)), headings_text(reference_headings(b))) for a, b in pairs]
    row("headings", [entity_scores(h, h) for h, _ in heads], [entity_scores(o, h) for h, o in heads])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--snippets", type=int, default=12)
    args = parser.parse_args()
    dataset = import_ruwikibench_json(sample_file()).dataset
    snippets = [s.text for s in dataset.snippets if len(s.text.split()) >= 400][: args.snippets]
    cost(snippets)
    labelled()
    sample(list(dataset.articles))


if __name__ == "__main__":
    main()
