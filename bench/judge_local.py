"""Judge a few real sections with a local OpenAI-compatible model and print the figures.

Two tiny ablation runs are written from the sample data (../shared/data/ruwiki): for N sections the model
writes the section text (a) from the section's cited sources ("grounded") and (b) from the title only
("closed"); the human-written section is the reference. Then both runs are judged on a few default criteria
(reference-guided) and compared pairwise in both orders (grounded = reference run A at 0, closed = B).

    flock /tmp/llm.lock python bench/judge_local.py --step generate
    flock /tmp/llm.lock python bench/judge_local.py --step criteria
    flock /tmp/llm.lock python bench/judge_local.py --step pairwise

Steps resume (texts and verdicts already stored are kept), so each can be run on its own under the lock.
The writer prompts below belong to this script only (they are not the benchmark's section writer).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import time
from pathlib import Path

from bs4 import BeautifulSoup

from ruwikibench.conf.config import RunConfig
from ruwikibench.evaluators.judges.common import judge_llm
from ruwikibench.evaluators.judges.criteria import CriteriaOptions, judge_run
from ruwikibench.evaluators.judges.criteria_set import load_criteria
from ruwikibench.evaluators.judges.criteria_summary import summarize_judgements
from ruwikibench.evaluators.judges.pairwise import PairwiseOptions, judge_runs
from ruwikibench.evaluators.judges.pairwise_summary import summarize_pairwise
from ruwikibench.evaluators.judges.rundir import clip, load_run
from ruwikibench.stage.contract import GeneratedText

REPO = Path(__file__).resolve().parents[1]


def _sample_dir() -> Path:
    """RUWIKIBENCH_SAMPLE, else shared/data/ruwiki next to the repository (or next to one of its parents)."""
    if os.environ.get("RUWIKIBENCH_SAMPLE"):
        return Path(os.environ["RUWIKIBENCH_SAMPLE"])
    for parent in REPO.parents:
        if (parent / "shared" / "data" / "ruwiki").exists():
            return parent / "shared" / "data" / "ruwiki"
    return REPO.parent / "shared" / "data" / "ruwiki"


SAMPLE = _sample_dir()
GROUNDED = (
    "Напиши текст раздела «{section}» энциклопедической статьи «{article}» в стиле Википедии по источникам "
    "ниже: 4–6 предложений связного текста по-русски, только факты из источников, нейтральный тон, без "
    "заголовков и списков. Напиши только текст раздела.\n\nИсточники:\n{sources}"
)
CLOSED = (
    "Напиши текст раздела «{section}» энциклопедической статьи «{article}» в стиле Википедии: 4–6 "
    "предложений связного текста по-русски, нейтральный тон, без заголовков и списков. Напиши только текст "
    "раздела."
)
_MARK = re.compile(r"\[(?:\d+|[А-ЯA-Z]\s*\d+|прим\.\s*\d+)\]")


def sections_of(entry: dict, min_chars: int, max_chars: int) -> list[dict]:
    """h2 sections of a page with their <p> text and the texts of the sources their paragraphs cite."""
    soup = BeautifulSoup(entry["html"], "lxml")
    body = soup.select_one("div.mw-parser-output")
    sources = {s["source_id"]: s["source_text"] for s in entry["sources"]}
    out, current = [], None
    for node in body.find_all(["h2", "p"]) if body else []:
        if node.name == "h2":
            current = {
                "title": re.sub(r"\[.*?\]", "", node.get_text()).strip(),
                "paragraphs": [],
                "cited": [],
            }
            out.append(current)
        elif current is not None:
            cited = [a["href"][1:] for a in node.select("sup.reference a[href^='#cite_note']")]
            hits = [c for c in cited if c in sources]
            if hits:
                current["paragraphs"].append(_MARK.sub("", node.get_text()).strip())
                current["cited"].extend(h for h in hits if h not in current["cited"])
    keep = []
    for s in out:
        text = "\n\n".join(s["paragraphs"])
        lengths = [len(sources[c]) for c in s["cited"]]
        if min_chars <= len(text) <= max_chars and lengths and max(lengths) >= 1500:
            keep.append({"title": s["title"], "reference": text, "sources": [sources[c] for c in s["cited"]]})
    return keep


def pick_items(n: int, source_chars: int) -> list[dict]:
    data = json.loads((SAMPLE / "ruwikibench_articles.json").read_text(encoding="utf-8"))
    items = []
    for entry in data:  # one section per article, in file order, until n
        found = sections_of(entry, 300, 1500)
        if found:
            s = found[0]
            sources = [clip(t, source_chars) for t in s["sources"][:2]]
            items.append({"article": entry["article_cleared_name"], **s, "sources": sources})
        if len(items) == n:
            break
    return items


def write_spec(path: Path, run_id: str, config: RunConfig) -> None:
    path.mkdir(parents=True, exist_ok=True)
    spec = {"run_id": run_id, "config": config.model_dump(mode="json")}
    (path / "spec.json").write_text(json.dumps(spec, ensure_ascii=False, indent=2), encoding="utf-8")


async def generate(out: Path, config: RunConfig, n: int, source_chars: int, max_tokens: int) -> None:
    llm, _ = judge_llm(config)
    for run_id, template in (("grounded", GROUNDED), ("closed", CLOSED)):
        path = out / run_id
        write_spec(path, run_id, config)
        target = path / "generated.jsonl"
        have = (
            {json.loads(line)["item"] for line in target.read_text().splitlines()}
            if target.exists()
            else set()
        )
        for index, item in enumerate(pick_items(n, source_chars)):
            if f"s{index}" in have:
                continue
            sources = "\n\n".join(f"[{k}] {t}" for k, t in enumerate(item["sources"], 1))
            prompt = template.format(section=item["title"], article=item["article"], sources=sources)
            started = time.perf_counter()
            completion = await llm.complete("judge", prompt, max_tokens=max_tokens)
            print(
                f"{run_id} s{index} «{item['title']}»: {completion.completion_tokens} tokens, "
                f"{time.perf_counter() - started:.1f} s"
            )
            text = GeneratedText(
                stage="sections",
                article=item["article"],
                item=f"s{index}",
                title=item["title"],
                text=completion.text,
                reference=item["reference"],
                sources=item["sources"],
            )
            with target.open("a", encoding="utf-8") as handle:
                handle.write(text.model_dump_json() + "\n")


async def criteria_step(
    out: Path, config: RunConfig, names: list[str], max_tokens: int, limits: dict
) -> None:
    llm, judge = judge_llm(config)
    chosen = load_criteria().select(names)
    options = CriteriaOptions(mode="guided", max_tokens=max_tokens, limits=limits)
    for run_id in ("grounded", "closed"):
        started = time.perf_counter()
        await judge_run(load_run(out / run_id), llm, chosen, judge=judge, options=options, progress=False)
        print(f"criteria {run_id}: {time.perf_counter() - started:.1f} s, usage {llm.usage.as_dict()}")
        for row in summarize_judgements(out / run_id):
            print("  ", row)
        for line in (out / run_id / "judge_criteria.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            print(f"   {record['item']} {record['criterion']}: {record['status']} {record['score']}")


async def pairwise_step(out: Path, config: RunConfig, max_tokens: int, limits: dict) -> None:
    llm, judge = judge_llm(config)
    options = PairwiseOptions(order="both", max_tokens=max_tokens, limits=limits)
    started = time.perf_counter()
    summary = await judge_runs(
        load_run(out / "grounded"),
        load_run(out / "closed"),
        llm,
        judge=judge,
        options=options,
        progress=False,
    )
    print(f"pairwise: {time.perf_counter() - started:.1f} s, usage {llm.usage.as_dict()}")
    for row in summarize_pairwise(out / "closed"):
        print("  ", row)
    for item in summary.per_item:
        print(
            f"   {item.item}: delta {item.delta:+.1f}, consistent {item.consistent}, "
            f"words {item.words_reference} vs {item.words_candidate}"
        )
    print(f"   statuses {summary.statuses}, first-shown advantage {summary.first_shown_advantage}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--step", choices=["generate", "criteria", "pairwise"], required=True)
    parser.add_argument("--out", type=Path, default=Path("/tmp/ruwikibench-judge-bench"))
    parser.add_argument("--endpoint", default="http://127.0.0.1:8081/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("-n", type=int, default=2, help="sections")
    parser.add_argument(
        "--criteria", nargs="+", default=["literacy", "topic_coverage", "source_faithfulness"]
    )
    parser.add_argument("--max-tokens", type=int, default=320, help="judge answers")
    parser.add_argument("--gen-max-tokens", type=int, default=200, help="generated sections")
    args = parser.parse_args()
    if not (SAMPLE / "ruwikibench_articles.json").exists():
        raise SystemExit(f"sample data not found in {SAMPLE} (set RUWIKIBENCH_SAMPLE)")
    config = RunConfig.model_validate(
        {
            "name": "judge-bench",
            "models": {
                "judge": {
                    "name": args.model,
                    "endpoints": [args.endpoint],
                    "max_tokens": args.max_tokens,
                    # a shared CPU server can take minutes per call: wait instead of re-sending (retries queue
                    # up)
                    "timeout": 900,
                    "max_retries": 0,
                }
            },
            "max_concurrency": 1,
        }
    )
    limits = {"text_chars": 1200, "reference_chars": 800, "source_chars": 600, "sources_chars": 1200}
    if args.step == "generate":
        asyncio.run(generate(args.out, config, args.n, source_chars=600, max_tokens=args.gen_max_tokens))
    elif args.step == "criteria":
        asyncio.run(criteria_step(args.out, config, args.criteria, args.max_tokens, limits))
    else:
        asyncio.run(pairwise_step(args.out, config, args.max_tokens, limits))


if __name__ == "__main__":
    main()
