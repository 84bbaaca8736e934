"""Local model speed: prefill and decode tokens/s and yes/no latency for a 600-word snippet.

    flock /tmp/llm.lock python bench/models.py [--model qwen2.5-coder-1.5b] [--base-url URL] [--repeats 3]

Without ``--base-url`` it starts the bundled llama.cpp server (ruwikibench.models.local_server) on a free port
and stops it at the end. Snippets are 600-word windows (the paper's snippet size) of real source texts from
RuWikiBench (``$RUWIKIBENCH_SAMPLE``, else shared/data/ruwiki beside the checkout or one of its parents);
every request uses a different source (no two opening alike) so llama.cpp's prompt-prefix reuse does not
flatter prefill.

* prefill: a 600-word prompt with max_tokens=1 — prompt tokens / wall time;
* decode: a short prompt streamed with max_tokens=N — (chunks − 1) / (time of last chunk − first chunk);
* yes/no: the relevance question over a 600-word snippet through LLM.complete (max_tokens=2,
  top_logprobs=10, no cache) — wall time per judgement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ruwikibench.conf.config import ModelConfig
from ruwikibench.models.llm import LLM
from ruwikibench.models.local_server import LocalServer
from ruwikibench.models.openai_backend import OpenAIBackend

WORDS = 600
YES_NO = "Тема: {title}\n\nТекст: {snippet}\n\nЭтот текст о теме «{title}»? Ответь только Да или Нет."


def sample_dir() -> Path:
    """``$RUWIKIBENCH_SAMPLE``, else shared/data/ruwiki beside the checkout (or beside a parent of it)."""
    env = os.environ.get("RUWIKIBENCH_SAMPLE")
    if env:
        return Path(env)
    candidates = [parent / "shared" / "data" / "ruwiki" for parent in ROOT.parents]
    return next((c for c in candidates if c.is_dir()), candidates[0])


def snippets(count: int) -> list[tuple[str, str]]:
    """``count`` (title, 600-word window) pairs, at most one per source and no two opening alike (several
    sources are copies of one page: a shared opening would let llama.cpp reuse its KV cache)."""
    path = sample_dir() / "ruwikibench_articles.json"
    if not path.exists():
        raise SystemExit(f"{path} not found: set RUWIKIBENCH_SAMPLE to the RuWikiBench sample folder")
    out: list[tuple[str, str]] = []
    openings: set[str] = set()
    for article in json.loads(path.read_text(encoding="utf-8")):
        for source in article["sources"]:
            words = source["source_text"].split()
            opening = " ".join(words[:20])
            if len(words) < WORDS or opening in openings:
                continue
            openings.add(opening)
            out.append((article["article_name"], " ".join(words[:WORDS])))
            if len(out) == count:
                return out
    raise SystemExit(f"only {len(out)} distinct sources of {WORDS}+ words in {path}")


def prefill(base_url: str, model: str, text: str) -> tuple[int, float]:
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="EMPTY")
    start = time.perf_counter()
    response = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": f"Прочитай текст.\n\n{text}\n\nОтветь: ок"}],
        max_tokens=1, temperature=0.01,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    assert response.usage is not None
    return response.usage.prompt_tokens, elapsed


def decode(base_url: str, model: str, tokens: int, nonce: int) -> tuple[int, float]:
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="EMPTY")
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": f"({nonce}) Подробно расскажи историю Москвы."}],
        max_tokens=tokens, temperature=0.01, stream=True,
    )  # fmt: skip
    stamps = [time.perf_counter() for chunk in stream if chunk.choices and chunk.choices[0].delta.content]
    return len(stamps), stamps[-1] - stamps[0]


async def yes_no(llm: LLM, title: str, snippet: str) -> tuple[float, int, str]:
    start = time.perf_counter()
    completion = await llm.complete(
        "ranking", YES_NO.format(title=title, snippet=snippet), max_tokens=2, top_logprobs=10
    )
    return time.perf_counter() - start, completion.prompt_tokens, completion.text


def run(base_url: str, model: str, repeats: int, decode_tokens: int) -> None:
    windows = snippets(2 * repeats + 1)
    warm = windows.pop()
    prefill(base_url, model, warm[1][:200])  # load weights into the page cache, not measured
    rates, sizes = [], []
    for _, text in windows[:repeats]:
        tokens, elapsed = prefill(base_url, model, text)
        rates.append(tokens / elapsed)
        sizes.append(tokens)
    print(
        f"prefill: {statistics.mean(rates):6.1f} tokens/s  (600-word prompts of {min(sizes)}–{max(sizes)} "
        f"tokens, {repeats} runs, min {min(rates):.1f}, max {max(rates):.1f})"
    )
    speeds = []
    for nonce in range(repeats):
        chunks, span = decode(base_url, model, decode_tokens, nonce)
        speeds.append((chunks - 1) / span)
    print(
        f"decode:  {statistics.mean(speeds):6.1f} tokens/s  ({decode_tokens} tokens streamed, {repeats} "
        f"runs, min {min(speeds):.1f}, max {max(speeds):.1f})"
    )
    backend = OpenAIBackend(ModelConfig(name=model, endpoints=[base_url]))
    llm = LLM({"ranking": backend}, max_concurrency=1)
    asyncio.run(yes_no(llm, warm[0], warm[1][:200]))  # imports and client set-up, not measured
    results = [asyncio.run(yes_no(llm, title, text)) for title, text in windows[repeats:]]
    latencies = [r[0] for r in results]
    print(
        f"yes/no:  {statistics.mean(latencies):6.2f} s per judgement  (600-word snippet, "
        f"{min(r[1] for r in results)}–{max(r[1] for r in results)} prompt tokens, {repeats} runs, "
        f"min {min(latencies):.2f}, max {max(latencies):.2f}; answers {[r[2] for r in results]})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="bundled local model to start")
    parser.add_argument("--base-url", help="use a running OpenAI-compatible server instead (…/v1)")
    parser.add_argument("--served-name", help="model name to send with --base-url (default: --model)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--n-threads", type=int, help="llama.cpp threads for the started server")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    if args.base_url:
        print(f"server: {args.base_url}")
        run(args.base_url, args.served_name or args.model, args.repeats, args.decode_tokens)
        return
    started = time.perf_counter()
    with LocalServer(args.model, n_threads=args.n_threads) as server:
        print(
            f"server: {args.model} at {server.base_url}, started in {time.perf_counter() - started:.1f} s "
            f"(n_threads={args.n_threads or 'llama.cpp default'})"
        )
        run(server.base_url, args.model, args.repeats, args.decode_tokens)
    print(f"machine: load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
