"""The HTML report at the paper's scale: two synthetic runs of 285 articles (all three stages, a node trace
per unit shaped like the real graphs'), then `ruwikibench report A B` in a child process (wall time, peak
memory) and the index and an article page opened in headless Chromium (time until the page's last script ran,
and the browser's wall time, both against an empty page).

    python bench/report_scale.py [--articles 285] [--work /tmp/report-scale]
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.dataset import Article, Dataset, Paragraph, Section, Snippet, Source
from ruwikibench.reporting.browser import dump_dom
from ruwikibench.runner.execute import finalize
from ruwikibench.storage.jsonl import dumps
from ruwikibench.storage.rundir import RunDir

SECTIONS, SOURCES, SNIPPETS_PER_SOURCE, POOL = 6, 8, 5, 36
WORDS = [
    "история",
    "город",
    "язык",
    "наука",
    "теория",
    "модель",
    "система",
    "развитие",
    "процесс",
    "структура",
    "метод",
    "данные",
]


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def make_dataset(n: int, rng: random.Random) -> Dataset:
    articles, sources, snippets = [], [], []
    for a in range(n):
        name = f"Статья {a:03d}"
        children = [
            Section(
                id=f"s{s}",
                level=2,
                title=f"Раздел {s} {rng.choice(WORDS)}",
                paragraphs=[Paragraph(text=text(rng, 120), citations=[f"cite_note-{s}"])],
            )
            for s in range(1, SECTIONS + 1)
        ]
        root = Section(
            id="s0", level=1, title=name, paragraphs=[Paragraph(text=text(rng, 60))], children=children
        )
        ids = []
        for s in range(SOURCES):
            source = Source(
                id=f"{name}/src{s}",
                article=name,
                footnote_id=f"cite_note-{s % SECTIONS + 1}",
                text=text(rng, 300),
            )
            sources.append(source)
            ids.append(source.id)
            snippets += [
                Snippet(
                    id=f"{source.id}#{k}",
                    article=name,
                    source_id=source.id,
                    index=k,
                    text=text(rng, 90),
                    word_start=k * 90,
                    word_end=(k + 1) * 90,
                )
                for k in range(SNIPPETS_PER_SOURCE)
            ]
        articles.append(Article(title=name, name=name, root=root, source_ids=ids))
    return Dataset(articles=articles, sources=sources, snippets=snippets)


def node(
    stage: str,
    article: str,
    unit: str,
    name: str,
    start: float,
    seconds: float,
    output: object,
    calls: int = 0,
    prompt: str | None = None,
    namespace: str = "",
) -> dict:
    return {
        "stage": stage,
        "article": article,
        "unit": unit,
        "node": name,
        "namespace": namespace,
        "task_id": f"{name}-{start}",
        "output": output,
        "error": None,
        "duration_s": seconds,
        "started_at": start,
        "ended_at": start + seconds,
        "llm_calls": calls,
        "prompt_tokens": 300 * calls,
        "completion_tokens": 40 * calls,
        "cache_hits": 0,
        "prompts": [{"name": prompt, "sha256": "ab12cd34ef56"}] if prompt else [],
        "answers": [{"role": "writer", "text": "да", "cached": False}] * calls,
    }


class Lines:
    """Buffered JSONL writing for synthetic files (no fsync per record: nothing here needs to survive a
    kill)."""

    def __init__(self, path: Path) -> None:
        self.handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def write(self, record: dict) -> None:
        self.handle.write(dumps(record) + "\n")

    def write_many(self, records: list[dict]) -> None:
        for record in records:
            self.write(record)

    def close(self) -> None:
        self.handle.close()


def write_run(rundir: RunDir, dataset: Dataset, quality: float, rng: random.Random) -> None:
    rundir.create()
    rundir.write_json(
        "spec.json",
        {
            "run_id": rundir.path.name,
            "dataset": {"id": "synthetic", "path": ""},
            "config": {"name": rundir.path.name, "quality": quality},
            "options": {"stages": ["ranking", "outline", "sections"]},
            "models": {},
        },
    )
    files = {
        name: Lines(rundir.file(name))
        for name in ("outputs.jsonl", "nodes.jsonl", "results.jsonl", "generated.jsonl")
    }
    snippets = {}
    for snippet in dataset.snippets:
        snippets.setdefault(snippet.article, []).append(snippet)
    all_ids = [s.id for s in dataset.snippets]
    for article in dataset.articles:
        t = time.time()
        own = snippets[article.name]
        pool = rng.sample([s.id for s in own], 12) + rng.sample(all_ids, POOL - 12)
        rng.shuffle(pool)
        candidates = [
            {
                "snippet_id": sid,
                "bm25_rank": i + 1,
                "bm25_score": 10.0 - i / 10,
                "rank": i + 1,
                "llm_score": rng.random(),
                "answer": "yes",
                "source": "logprobs",
                "reply": "да",
                "error": None,
                "p_yes": 0.5,
                "p_no": 0.5,
                "p_yes_norm": 0.5,
            }
            for i, sid in enumerate(pool)
        ]
        files["outputs.jsonl"].write(
            {
                "stage": "ranking",
                "article": article.name,
                "unit": "article",
                "input": {"article": article.name, "title": article.title},
                "output": {
                    "query": article.title,
                    "query_mode": "generated",
                    "pool_size": POOL,
                    "candidates": candidates,
                    "error": None,
                },
            }
        )
        nodes = [
            node(
                "ranking",
                article.name,
                "article",
                "expand_query",
                t,
                4.0,
                {"query": article.title},
                2,
                "ru/query_description_ru.txt",
            ),
            node("ranking", article.name, "article", "retrieve", t + 4, 0.3, {"hits": candidates}),
        ]
        nodes += [
            node(
                "ranking",
                article.name,
                "article",
                "rerank",
                t + 4.3 + i * 0.05,
                0.7,
                {"judgements": []},
                1,
                "ru/relevance.txt",
            )
            for i in range(POOL)
        ]
        files["nodes.jsonl"].write_many(nodes)
        score = min(1.0, max(0.0, quality + rng.gauss(0, 0.1)))
        files["results.jsonl"].write(
            {
                "stage": "ranking",
                "article": article.name,
                "item": "article",
                "unit": "article",
                "metrics": {
                    "bm25_ndcg": 0.6,
                    "bm25_r_precision": 0.4,
                    "rerank_ndcg": score,
                    "rerank_r_precision": score * 0.8,
                    "pool_recall": 0.3,
                },
                "info": {},
            }
        )
        headings = [{"level": 2, "title": f"Раздел {rng.choice(WORDS)}"} for _ in range(8)]
        files["outputs.jsonl"].write(
            {
                "stage": "outline",
                "article": article.name,
                "unit": "article",
                "input": {
                    "title": article.title,
                    "headings": article.h2_titles(),
                    "snippets": [s.model_dump() for s in own],
                },
                "output": {"k": 6, "k_method": "h2", "outline": headings, "dropped": []},
            }
        )
        files["nodes.jsonl"].write_many(
            [
                node(
                    "outline",
                    article.name,
                    "article",
                    f"describe_{i}",
                    t + i * 2,
                    2.0,
                    {"text": text(rng, 80)},
                    1,
                    "ru/outline_description.txt",
                )
                for i in range(6)
            ]
            + [
                node(
                    "outline",
                    article.name,
                    "article",
                    "merge",
                    t + 12,
                    3.0,
                    {"outline": headings},
                    1,
                    "ru/outline_merge.txt",
                )
            ]
        )
        files["results.jsonl"].write(
            {
                "stage": "outline",
                "article": article.name,
                "item": "article",
                "unit": "article",
                "metrics": {
                    "f1": score,
                    "precision": score,
                    "recall": score,
                    "soft_recall": score,
                    "gen_headings": 8.0,
                    "gen_max_depth": 2.0,
                },
                "info": {},
            }
        )
        for section in article.root.children:
            spec = {
                "id": section.id,
                "title": section.title,
                "level": 2,
                "reference": section.text(),
                "snippets": [{"id": s.id, "text": s.text} for s in own[:6]],
            }
            result = {
                "id": section.id,
                "title": section.title,
                "level": 2,
                "text": text(rng, 150),
                "status": "ok",
                "snippets_total": 6,
                "snippet_ids": [s.id for s in own[:6]],
            }
            files["outputs.jsonl"].write(
                {
                    "stage": "sections",
                    "article": article.name,
                    "unit": section.id,
                    "input": {"article": article.title, "sections": [spec]},
                    "output": {"results": [result]},
                }
            )
            files["nodes.jsonl"].write_many(
                [
                    node(
                        "sections",
                        article.name,
                        section.id,
                        f"summarize_{i}",
                        t + i * 3,
                        3.0,
                        {"text": text(rng, 60)},
                        1,
                        "ru/section_summary.txt",
                    )
                    for i in range(5)
                ]
            )
            files["results.jsonl"].write(
                {
                    "stage": "sections",
                    "article": article.name,
                    "item": section.id,
                    "unit": section.id,
                    "metrics": {
                        "f1": score,
                        "rouge_l": score / 3,
                        "bleu": score / 10,
                        "p": score,
                        "r": score,
                    },
                    "info": {},
                }
            )
            files["generated.jsonl"].write(
                {
                    "stage": "sections",
                    "article": article.name,
                    "item": section.id,
                    "title": section.title,
                    "text": result["text"],
                    "reference": section.text(),
                    "sources": [],
                }
            )
    for appender in files.values():
        appender.close()
    finalize(rundir)


def page_ms(page: Path) -> tuple[float, float]:
    """(ms until the page's last script ran, as the page measures it; browser wall time in s)."""
    probe = page.with_name(page.stem + ".probe.html")
    marker = "<script>document.body.setAttribute('data-ready', performance.now().toFixed(0));</script></body>"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", marker), encoding="utf-8")
    began = time.perf_counter()
    dom = dump_dom(probe)
    wall = time.perf_counter() - began
    probe.unlink()
    return float(dom.split('data-ready="')[1].split('"')[0]), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=285)
    parser.add_argument("--work", type=Path, default=Path("/tmp/report-scale"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    rng = random.Random(0)
    dataset = make_dataset(args.articles, rng)
    save_dataset(dataset, args.work / "data")
    runs = [args.work / "runs" / name for name in ("base", "ablation")]
    began = time.perf_counter()
    for path, quality in zip(runs, (0.6, 0.65), strict=True):
        write_run(RunDir(path), dataset, quality, rng)
        spec = RunDir(path).read_json("spec.json")
        spec["dataset"]["path"] = str(args.work / "data")
        RunDir(path).write_json("spec.json", spec)
    print(
        f"synthetic runs: {args.articles} articles × 2 runs in {time.perf_counter() - began:.1f} s; "
        f"nodes.jsonl {runs[0].joinpath('nodes.jsonl').stat().st_size / 1e6:.1f} MB, "
        f"outputs.jsonl {runs[0].joinpath('outputs.jsonl').stat().st_size / 1e6:.1f} MB per run"
    )
    out = args.work / "cmp"
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ruwikibench", "report", *map(str, runs), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6
    pages = sorted((out / "articles").glob("a*.html"))
    size = (out / "report.html").stat().st_size / 1e6
    print(
        f"report of 2 runs × {args.articles} articles: {seconds:.1f} s, peak memory {peak_gb:.2f} GB; "
        f"report.html {size:.2f} MB, {len(pages)} article pages of "
        f"{sum(p.stat().st_size for p in pages) / len(pages) / 1e3:.0f} kB mean"
    )
    empty = out / "empty.html"
    empty.write_text("<!doctype html><html><body><p>empty</p></body></html>", encoding="utf-8")
    for label, page in (
        ("empty page", empty),
        ("report.html (index)", out / "report.html"),
        ("article page", pages[len(pages) // 2]),
    ):
        ready, wall = page_ms(page)
        print(f"{label}: ready after {ready:.0f} ms in the page, chromium wall {wall:.2f} s")


if __name__ == "__main__":
    main()
