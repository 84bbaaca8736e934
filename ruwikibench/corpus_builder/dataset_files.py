"""Resolve the --dataset option: a processed directory, a RuWikiBench JSON file, or the published dataset on
the hub."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ruwikibench.conf.config import RunInputError
from ruwikibench.dataset import Dataset
from ruwikibench.storage.durable import replace_durably

HUB_PREFIX = "hf://"
DEFAULT_HUB_FILE = "ruwikibench_articles.json"


class DatasetError(RunInputError):
    """A --dataset that cannot be used; one line naming the file (and the article)."""


def cache_root() -> Path:
    import os

    return Path(os.environ.get("RUWIKIBENCH_CACHE", "~/.cache/ruwikibench")).expanduser()


def resolve_dataset(
    spec: str, *, source_texts: bool = True, snippet_texts: bool = True
) -> tuple[Dataset, Path]:
    """Load a dataset from ``spec``; a JSON file is imported once into a cache directory keyed by its hash.
    Anything unusable raises :class:`DatasetError` naming the file (articles that failed to import: see
    :func:`import_errors`). ``source_texts=False``, ``snippet_texts=False``: the sources', the snippets' texts
    stay on disk until asked for (:func:`~ruwikibench.corpus_builder.store.load_dataset`)."""
    from ruwikibench.corpus_builder.store import DatasetStoreError, load_dataset

    if spec.startswith(HUB_PREFIX):
        spec = str(download_from_hub(spec[len(HUB_PREFIX) :]))
    path = Path(spec).expanduser()
    try:
        if path.is_dir():
            dataset = load_dataset(path, source_texts=source_texts, snippet_texts=snippet_texts)
        elif path.is_file() and path.suffix == ".json":
            dataset, path = _import_json(path, source_texts, snippet_texts)
        elif not path.exists():
            raise DatasetError(f"{spec}: no such file or directory")
        else:
            raise DatasetError(
                f"{spec}: not a processed dataset directory, a RuWikiBench .json file or "
                f"{HUB_PREFIX}REPO[/FILE]"
            )
    except DatasetStoreError as exc:
        raise DatasetError(str(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"{spec}: not a usable dataset: {exc}") from None
    if not dataset.articles:
        raise DatasetError(f"{spec}: the dataset holds no article" + _failed_note(path))
    return dataset, path


def _failed_note(path: Path) -> str:
    failed = import_errors(path)
    return f" ({len(failed)} failed to import; first: {failed[0]})" if failed else ""


def import_errors(path: Path) -> list[str]:
    """The articles of a RuWikiBench JSON file that failed to import into the processed dataset at ``path``
    (one line each, as ``corpus import`` prints them); empty for a dataset with none."""
    import json

    manifest = path / "manifest.json"
    try:
        return [str(e) for e in json.loads(manifest.read_text(encoding="utf-8")).get("errors") or []]
    except (OSError, ValueError):
        return []


def _import_json(path: Path, source_texts: bool = True, snippet_texts: bool = True) -> tuple[Dataset, Path]:
    """The processed dataset of a RuWikiBench JSON file: imported once (the import code, lxml among it, is
    loaded only then)."""
    from ruwikibench.corpus_builder.store import load_dataset, save_dataset

    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    target = cache_root() / "datasets" / f"{path.stem}-{digest}"
    if (target / "manifest.json").exists():
        return load_dataset(target, source_texts=source_texts, snippet_texts=snippet_texts), target
    from ruwikibench.corpus_builder.ruwikibench_json import CorpusError, import_ruwikibench_json

    try:
        result = import_ruwikibench_json(path)
    except CorpusError as exc:
        raise DatasetError(str(exc)) from None
    save_dataset(result.dataset, target, errors=result.errors)
    return result.dataset, target


def hub_endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` (the variable huggingface_hub reads; a mirror) or huggingface.co."""
    import os

    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def download_from_hub(repo_and_file: str, timeout: float = 60.0) -> Path:
    """Fetch ``REPO[/FILE]`` (a Hugging Face dataset repository) into the cache; clear error when
    unreachable."""
    import httpx

    parts = repo_and_file.strip("/").split("/")
    if len(parts) < 2:
        raise DatasetError(f"{HUB_PREFIX}{repo_and_file}: expected {HUB_PREFIX}OWNER/NAME[/FILE]")
    repo, filename = "/".join(parts[:2]), "/".join(parts[2:]) or DEFAULT_HUB_FILE
    target = cache_root() / "hub" / repo.replace("/", "__") / filename
    if target.exists():
        return target
    url = f"{hub_endpoint()}/datasets/{repo}/resolve/main/{filename}"
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=timeout) as response:
            response.raise_for_status()
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(target.suffix + ".part")
            with open(tmp, "wb") as handle:
                handle.writelines(response.iter_bytes())
            replace_durably(tmp, target)
    except httpx.HTTPStatusError as exc:
        raise DatasetError(
            f"cannot download {url}: the hub answered HTTP {exc.response.status_code}; check OWNER/NAME and "
            "the file name, or download the file elsewhere and pass its path with --dataset"
        ) from exc
    except httpx.HTTPError as exc:
        raise DatasetError(
            f"cannot download {url}: {type(exc).__name__}: {exc}. The hub is unreachable from here: download "
            "the file elsewhere and pass its path with --dataset"
        ) from exc
    return target
