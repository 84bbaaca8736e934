"""Content-free, one-word and wrong-article sections planted on the sample and scored by ``score-outputs``.

    python bench/section_probes.py [--config configs/local.yaml] [--out /tmp/section_probes]
        [--probe dot --probe empty --probe word --probe wrong --probe reference]

Every section of the 8 sample articles gets the same kind of planted text, one run per kind:

* ``dot``: ".";  ``empty``: "";  ``word``: the article title's first word and a full stop («Python.»);
* ``wrong``: a real section of the wrong article (the next article's section at the same position);
* ``reference``: the section's own text (the identity).

Each run is scored by the project's ``score-outputs`` (its own floors and baselines), in a scratch cache under
``--out`` (the e5-int8 model linked in), and one line per run prints the failures-excluded means ×100 of the
metrics the vs-baseline verdict reads, with the F1 floor.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.entities import sample_file
from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json

PROBES = ("dot", "empty", "word", "wrong", "reference")
SHOWN = ("f1", "f1_floor", "f1_rescaled", "p", "r", "rouge_l", "bleu", "entity_recall")


def planted_rows(dataset_file: Path, probe: str) -> list[dict[str, object]]:
    articles = import_ruwikibench_json(dataset_file).dataset.articles
    texts = [[s.text() for s in a.sections() if s.text().strip()] for a in articles]
    rows: list[dict[str, object]] = []
    for index, article in enumerate(articles):
        other = texts[(index + 1) % len(articles)]
        word = article.title.split()[0].strip("(),")
        for position, section in enumerate(article.sections()):
            text = {
                "dot": ".",
                "empty": "",
                "word": f"{word}.",
                "wrong": other[position % len(other)],
                "reference": section.text(),
            }[probe]
            rows.append(
                {
                    "article": article.name,
                    "section": section.id,
                    "title": section.title,
                    "level": section.level,
                    "text": text,
                }
            )
    return rows


def scratch_cache(out: Path) -> Path:
    from ruwikibench.models.e5_int8_asset import model_path

    cache = out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "models").exists():
        (cache / "models").symlink_to(model_path().parent, target_is_directory=True)
    return cache


def score(probe: str, dataset_file: Path, config: Path, out: Path) -> dict[str, float]:
    out.mkdir(parents=True, exist_ok=True)
    outputs = out / f"{probe}.jsonl"
    rows = planted_rows(dataset_file, probe)
    outputs.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    command = [
        *(sys.executable, "-m", "ruwikibench", "score-outputs", "--stage", "sections"),
        *("--outputs", str(outputs), "--dataset", str(dataset_file), "--config", str(config)),
        *("--out", str(out / "runs"), "--name", probe),
    ]
    env = {**os.environ, "RUWIKIBENCH_CACHE": str(scratch_cache(out))}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 3):
        raise SystemExit(f"{probe}: score-outputs exited {done.returncode}: {done.stderr[-800:]}")
    metrics = json.loads((out / "runs" / probe / "metrics.json").read_text(encoding="utf-8"))
    stage = metrics.get("stages", metrics)["sections"]["metrics"]
    return {key: stage[key]["failures_excluded"]["mean"] for key in SHOWN if key in stage}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "local.yaml")
    parser.add_argument("--out", type=Path, default=Path("/tmp/section_probes"))
    parser.add_argument("--probe", action="append", choices=PROBES)
    args = parser.parse_args()
    dataset_file = sample_file()
    for probe in args.probe or PROBES:
        means = score(probe, dataset_file, args.config, args.out)
        shown = " ".join(f"{k} {100 * means[k]:.2f}" if k in means else f"{k} —" for k in SHOWN)
        print(f"{probe:<10} {shown}", flush=True)


if __name__ == "__main__":
    main()
