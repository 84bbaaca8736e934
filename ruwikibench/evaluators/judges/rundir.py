"""Reading run directories (``spec.json`` + ``generated.jsonl``) and appending/reading judge JSONL files."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from ruwikibench.conf.config import RunConfig
from ruwikibench.prompts.render import cut_text
from ruwikibench.stage.contract import GeneratedText
from ruwikibench.storage import jsonl
from ruwikibench.storage.durable import write_atomic
from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import InvalidSpec, parse_spec

SPEC = "spec.json"
GENERATED = "generated.jsonl"


M = TypeVar("M", bound=BaseModel)


class Keyed(Protocol):
    def key(self) -> tuple[str, ...]: ...


K = TypeVar("K", bound=Keyed)


class RunError(ValueError):
    """A run directory or a judge file that cannot be read; the message names the file and the line."""


class Run(BaseModel):
    path: Path
    run_id: str
    config: RunConfig | None = None
    config_error: str | None = None
    texts: list[GeneratedText]


def text_key(text: GeneratedText) -> tuple[str, str, str]:
    return (text.stage, text.article, text.item)


def text_sha(text: GeneratedText) -> str:
    """A short hash of what is judged (text + what it is judged against); a changed text is judged anew."""
    payload = json.dumps([text.text, text.reference, text.sources], ensure_ascii=False)
    return hashlib.sha1(payload.encode()).hexdigest()[:12]


def safe_id(run_id: str) -> str:
    """A run id usable in file names."""
    return re.sub(r"[^\w.\-]+", "_", run_id).strip("_") or "run"


def load_run(path: str | Path, stages: Iterable[str] | None = None) -> Run:
    """Load ``spec.json`` and ``generated.jsonl`` of a run directory (texts optionally filtered by stage): the
    latest text of each item, as the runner reads them (a resumed run that re-scored an item wrote it
    again)."""
    rundir = RunDir(path)
    spec_path = rundir.file(SPEC)
    if not rundir.path.is_dir():
        raise RunError(f"{rundir.path}: not a run directory")
    if not spec_path.exists():
        raise RunError(f"{spec_path}: missing (a run directory holds spec.json and generated.jsonl)")
    try:
        spec = parse_spec(json.loads(spec_path.read_text(encoding="utf-8")), spec_path)
    except json.JSONDecodeError as exc:
        raise RunError(f"{spec_path}: invalid JSON: {exc}") from exc
    except InvalidSpec as exc:
        raise RunError(str(exc)) from None
    if spec.run_id is None:
        raise RunError(f"{spec_path}: field 'run_id' missing")
    config, config_error = None, None
    if spec.config is not None:
        try:
            config = spec.run_config(spec_path)
        except InvalidSpec as exc:  # only fatal if the judge must come from this config
            config_error = str(exc)
    wanted = set(stages) if stages else None
    latest = {text_key(t): t for t in _read_texts(rundir.file(GENERATED))}
    texts = [t for t in latest.values() if wanted is None or t.stage in wanted]
    return Run(path=rundir.path, run_id=spec.run_id, config=config, config_error=config_error, texts=texts)


def _read_texts(path: Path) -> Iterator[GeneratedText]:
    if not path.exists():
        raise RunError(f"{path}: missing (no generated texts in this run)")
    for number, row in read_jsonl(path):
        try:
            yield GeneratedText.model_validate(row)
        except ValidationError as exc:
            fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise RunError(f"{path}:{number}: not a generated text: {fields}") from exc


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-empty line (:func:`ruwikibench.storage.jsonl.read_jsonl`: a torn
    last line is skipped); a bad line is a :class:`RunError` naming the file and the line."""
    try:
        yield from jsonl.read_jsonl(path)
    except jsonl.JsonlError as exc:
        raise RunError(str(exc)) from None


def read_models(path: Path, model: type[M], what: str) -> list[M]:
    """Every line of a verdict file as ``model``, in file order; a line that is not one is a :class:`RunError`
    naming the file, the line and ``what`` it should be."""
    records = []
    for number, row in read_jsonl(path):
        try:
            records.append(model.model_validate(row))
        except ValidationError as exc:
            raise RunError(f"{path}:{number}: not a {what}: {exc.errors()[0]['msg']}") from exc
    return records


def latest_verdicts(records: Iterable[K]) -> list[K]:
    """The last record per ``record.key()``: reruns and re-judged texts supersede older lines."""
    return jsonl.latest(records, key=lambda record: record.key())


class JsonlWriter(jsonl.JsonlAppender):
    """Appends verdicts under the package's one durability rule (flush + fsync per record; torn tail cut
    off)."""


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON, atomically, secrets redacted."""
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def clip(text: str, limit: int | None) -> str:
    """Cut a text for a judge prompt to ``limit`` characters (line breaks kept), marking the cut with
    «[…]»."""
    return cut_text(text, limit, keep=0.8, marker=" […]", squash=False)
