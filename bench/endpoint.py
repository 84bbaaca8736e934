"""A small OpenAI-compatible chat endpoint with a fixed latency, for measuring the pipeline's own overhead.

Every request is answered after ``--latency`` seconds (asyncio, so thousands can wait at once). Answers follow
the prompt files the pipeline sends:

* relevance prompts (``ru/relevance.txt``) answer «Да» or «Нет» from the dataset's ground truth — «Да» when
  the snippet quoted in the prompt comes from the sources of the article named in it — with first-token
  logprobs, so rankings are meaningful (relevant first);
* query descriptions answer the title followed by the article's H2 headings (a usable BM25 query);
* outline prompts answer a few markdown headings, and ``**END**`` for the merge;
* everything else answers a short paragraph built from words of the prompt.

``GET /stats`` returns the request count, the distinct prompts and each request's arrival time.

    python bench/endpoint.py --dataset ../shared/data/ruwiki/ruwikibench_articles.json \\
        --latency 0.5 --port 8500
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ruwikibench.dataset import Dataset
from ruwikibench.prompts import PromptLibrary

KINDS = {
    "relevance": "ru/relevance.txt",
    "query": "ru/query_description_ru.txt",
    "query_en": "ru/query_description_en.txt",
    "outline_merge": "ru/outline_merge.txt",
    "outline_mini": "ru/outline_mini_description.txt",
    "outline_mini_direct": "ru/outline_mini_direct.txt",
}
_FIELD = re.compile(r"\{[a-z_]+\}")
_WORD = re.compile(r"[А-Яа-яЁёA-Za-z]{5,}")


def _fragments(text: str) -> list[str]:
    return [part.strip() for part in _FIELD.split(text) if len(part.strip()) >= 12]


class Responder:
    """Answers by prompt kind; relevance from ground truth."""

    def __init__(self, dataset: Dataset) -> None:
        library = PromptLibrary()
        self.templates = {kind: _fragments(library.get(path).text) for kind, path in KINDS.items()}
        self.by_title = {a.title: a for a in dataset.articles}
        self.article_sources = {a.title: set(a.source_ids) for a in dataset.articles}
        self.sources_of: dict[
            str, set[str]
        ] = {}  # a text can be in several articles' sources (bench/scale.py)
        for snippet in dataset.snippets:
            self.sources_of.setdefault(" ".join(snippet.text.split())[:200], set()).add(snippet.source_id)

    def kind(self, prompt: str) -> str:
        for name, parts in sorted(self.templates.items(), key=lambda item: -sum(map(len, item[1]))):
            if parts and all(part in prompt for part in parts):
                return name
        return "other"

    def title(self, prompt: str) -> str | None:
        for match in re.findall(r"«([^»]+)»", prompt):
            if match in self.by_title:
                return match
        return None

    def relevant(self, prompt: str) -> bool:
        title = self.title(prompt)
        quoted = prompt.split('"""')
        if title is None or len(quoted) < 3:
            return False
        sources = self.sources_of.get(" ".join(quoted[1].split())[:200], set())
        return not sources.isdisjoint(self.article_sources[title])

    def answer(self, prompt: str) -> tuple[str, list[dict[str, Any]] | None]:
        kind = self.kind(prompt)
        if kind == "relevance":
            yes = self.relevant(prompt)
            p_yes = 0.95 if yes else 0.05
            token = "Да" if yes else "Нет"
            top = [
                {"token": "Да", "logprob": math.log(p_yes), "bytes": None},
                {"token": "Нет", "logprob": math.log(1 - p_yes), "bytes": None},
            ]
            return token, [
                {
                    "token": token,
                    "logprob": math.log(max(p_yes, 1 - p_yes)),
                    "bytes": None,
                    "top_logprobs": top,
                }
            ]
        title = self.title(prompt) or "Статья"
        if kind in ("query", "query_en"):
            article = self.by_title.get(title)
            headings = [s.title for s in article.root.children] if article else []
            return f"{title}. " + ". ".join(headings), None
        words = list(dict.fromkeys(_WORD.findall(prompt)))[:40]
        if kind.startswith("outline_mini"):
            return "\n".join(f"## {w.capitalize()}" for w in words[:3]), None
        if kind == "outline_merge":
            return f"# {title}\n" + "\n".join(f"## {w.capitalize()}" for w in words[:6]) + "\n**END**", None
        return " ".join(words) + ".", None


class Stats:
    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.prompts: set[str] = set()
        self.started = time.time()

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": len(self.arrivals),
            "distinct_prompts": len(self.prompts),
            "arrivals": self.arrivals,
        }


def _response(status: int, body: dict[str, Any]) -> bytes:
    data = json.dumps(body, ensure_ascii=False).encode()
    head = f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    return head.encode() + data


async def _handle(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    responder: Responder,
    stats: Stats,
    latency: float,
) -> None:
    try:
        while True:
            request_line = await reader.readline()
            if not request_line:
                return
            headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                key, _, value = line.decode().partition(":")
                headers[key.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", 0)))
            method, path, _ = request_line.decode().split(" ", 2)
            if method == "GET" and path.startswith("/stats"):
                writer.write(_response(200, stats.as_dict()))
            else:
                writer.write(await _chat(json.loads(body), responder, stats, latency))
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        writer.close()


async def _chat(payload: dict[str, Any], responder: Responder, stats: Stats, latency: float) -> bytes:
    stats.arrivals.append(time.time())
    prompt = payload["messages"][-1]["content"]
    stats.prompts.add(hashlib.sha256(prompt.encode()).hexdigest())
    text, logprobs = responder.answer(prompt)
    await asyncio.sleep(latency)
    choice: dict[str, Any] = {
        "index": 0,
        "finish_reason": "stop",
        "message": {"role": "assistant", "content": text},
    }
    if payload.get("logprobs") and logprobs:
        choice["logprobs"] = {"content": logprobs}
    return _response(
        200,
        {
            "id": "bench",
            "object": "chat.completion",
            "created": 0,
            "model": payload.get("model"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(prompt) // 4,
                "completion_tokens": len(text) // 4,
                "total_tokens": (len(prompt) + len(text)) // 4,
            },
        },
    )


async def serve(dataset: Dataset, latency: float, port: int, ready: Any = None) -> None:
    responder, stats = Responder(dataset), Stats()
    server = await asyncio.start_server(
        lambda r, w: _handle(r, w, responder, stats, latency), "127.0.0.1", port, backlog=1024
    )
    if ready is not None:
        ready(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def main() -> None:
    from ruwikibench.corpus_builder.dataset_files import resolve_dataset

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--port", type=int, default=8500)
    args = parser.parse_args()
    dataset, _ = resolve_dataset(args.dataset)
    print(f"serving http://127.0.0.1:{args.port}/v1 (latency {args.latency} s)", flush=True)
    asyncio.run(serve(dataset, args.latency, args.port))


if __name__ == "__main__":
    main()
