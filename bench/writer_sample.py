"""Figures of a writer run: wall time, LLM calls and tokens (total and per node), scores, the article's first
lines.

    python bench/writer_sample.py RUN_DIR           # a `ruwikibench write --batch` run directory
    python bench/writer_sample.py ARTICLE_DIR       # a single `ruwikibench write` output directory

To produce a sample with the shared local server (one article, capped):

    flock /tmp/llm.lock ruwikibench write --batch --dataset ../shared/data/ruwiki/ruwikibench_articles.json \\
        --config CONFIG --article "Летние Олимпийские игры 2024" --out runs --run-id writer-sample
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def article_dirs(path: Path) -> list[Path]:
    if (path / "article.json").exists():
        return [path]
    return sorted(p for p in (path / "articles").glob("*") if (p / "article.json").exists())


def node_table(trace: list[dict]) -> list[tuple[str, int, int, float]]:
    """(node, LLM calls, tokens, summed seconds) per node name, namespaced by its stage graph."""
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    for record in trace:
        stage = record["namespace"].split(":")[0] if record["namespace"] else ""
        key = f"{stage}/{record['node']}" if stage else record["node"]
        rows[key][0] += record["llm_calls"]
        rows[key][1] += record["prompt_tokens"] + record["completion_tokens"]
        rows[key][2] += record["duration_s"]
    return sorted(((k, int(v[0]), int(v[1]), v[2]) for k, v in rows.items()), key=lambda r: -r[1])


def scores(run_dir: Path, article: str) -> dict[str, dict[str, float]]:
    path = run_dir / "results.jsonl"
    if not path.exists():
        return {}
    out: dict[str, dict[str, float]] = {}
    sections: dict[str, list[float]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["article"] != article or record.get("excluded"):
            continue
        if record["stage"] == "sections":
            for key in ("f1", "rouge_l", "bleu"):
                sections[key].append(record["metrics"][key])
        else:
            out[record["stage"]] = record["metrics"]
    if sections:
        out["sections (mean over reference sections)"] = {k: sum(v) / len(v) for k, v in sections.items()}
    return out


def main(path: Path) -> None:
    for directory in article_dirs(path):
        data = json.loads((directory / "article.json").read_text(encoding="utf-8"))
        session = data["session"]
        print(f"# {data['title']}  ({directory})")
        print(
            f"wall time {session['wall_time_s']} s · LLM calls {session['llm_calls']} (cache hits "
            f"{session.get('cache_hits', 0)}) · prompt tokens "
            f"{session['prompt_tokens']} · completion tokens {session['completion_tokens']}"
        )
        print("stats:", {k: v for k, v in data["stats"].items()})
        print("\nnode                                  calls   tokens   seconds")
        for name, calls, tokens, seconds in node_table(data["trace"]):
            if calls or seconds > 1:
                print(f"{name:36s} {calls:6d} {tokens:8d} {seconds:9.1f}")
        for stage, metrics in scores(path, directory.name).items():
            shown = {
                k: round(v, 4)
                for k, v in metrics.items()
                if k
                in {
                    "f1",
                    "precision",
                    "recall",
                    "p",
                    "r",
                    "rouge_l",
                    "bleu",
                    "soft_recall",
                    "gen_headings",
                    "source_precision",
                    "source_recall",
                    "cited_own_share",
                }
            }
            print(f"{stage}: {shown}")
        print("\n" + "\n".join(data["markdown"].splitlines()[:12]))
        print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
