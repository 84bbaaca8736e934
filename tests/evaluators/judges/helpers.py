"""Test helpers: tiny run directories and a scripted fake judge."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.runner.stage import GeneratedText

CONFIG = {
    "name": "tiny",
    "models": {"writer": {"name": "writer-model", "endpoints": ["http://127.0.0.1:9/v1"]}},
}


def write_run(path: Path, run_id: str, texts: list[GeneratedText], config: dict | None = CONFIG) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    spec = {"run_id": run_id, "config": config}
    (path / "spec.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    lines = [t.model_dump_json() for t in texts]
    (path / "generated.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def section(item: str, text: str, **extra: object) -> GeneratedText:
    fields: dict[str, object] = {
        "stage": "sections",
        "article": "Пушкин",
        "item": item,
        "title": f"Раздел {item}",
        "text": text,
        "reference": f"Эталонный текст раздела {item}.",
        "sources": [f"Источник о разделе {item}."],
    }
    fields.update(extra)
    return GeneratedText.model_validate(fields)


def fake_llm(responder: Callable[[str], str], concurrency: int = 4) -> tuple[LLM, ScriptedChat]:
    chat = ScriptedChat(lambda messages: responder(messages[-1]["content"]), name="fake-judge")
    return LLM({"judge": chat}, max_concurrency=concurrency), chat
