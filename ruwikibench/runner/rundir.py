"""The run directory: spec.json, nodes.jsonl, outputs.jsonl, results.jsonl, errors.jsonl, metrics, report.

Every JSONL file is appended line by line as work finishes (flushed and fsynced), so a run killed at any point
(kill -9 included) keeps everything already computed; a torn last line is ignored on reading.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FILES = ("spec.json", "nodes.jsonl", "outputs.jsonl", "results.jsonl", "errors.jsonl", "generated.jsonl")


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def file(self, name: str) -> Path:
        return self.path / name

    def create(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)

    def append(self, name: str, record: dict[str, Any]) -> None:
        with open(self.file(name), "a", encoding="utf-8") as handle:
            handle.write(_json(record) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def rewrite(self, name: str, records: list[dict[str, Any]]) -> None:
        tmp = self.file(name + ".tmp")
        tmp.write_text("".join(_json(r) + "\n" for r in records), encoding="utf-8")
        tmp.replace(self.file(name))

    def read(self, name: str) -> Iterator[dict[str, Any]]:
        path = self.file(name)
        if not path.exists():
            return
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line from a killed run

    def write_json(self, name: str, data: Any) -> None:
        tmp = self.file(name + ".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
        tmp.replace(self.file(name))

    def read_json(self, name: str) -> Any:
        path = self.file(name)
        if not path.exists():
            raise FileNotFoundError(f"{path}: not found — is {self.path} a run directory?")
        return json.loads(path.read_text(encoding="utf-8"))
