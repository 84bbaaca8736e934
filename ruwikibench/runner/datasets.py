"""Resolve the --dataset option: a processed directory, a RuWikiBench JSON file, or the published dataset on the hub."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ruwikibench.dataset import Dataset

HUB_PREFIX = "hf://"
DEFAULT_HUB_FILE = "ruwikibench_articles.json"


class DatasetError(ValueError):
    pass


def cache_root() -> Path:
    import os

    return Path(os.environ.get("RUWIKIBENCH_CACHE", "~/.cache/ruwikibench")).expanduser()


def resolve_dataset(spec: str) -> tuple[Dataset, Path]:
    """Load a dataset from ``spec``; a JSON file is imported once into a cache directory keyed by its hash."""
    from ruwikibench.corpus_builder.store import load_dataset

    if spec.startswith(HUB_PREFIX):
        spec = str(download_from_hub(spec[len(HUB_PREFIX):]))
    path = Path(spec).expanduser()
    if path.is_dir():
        return load_dataset(path), path
    if path.is_file() and path.suffix == ".json":
        return _import_json(path)
    raise DatasetError(f"{spec}: not a processed dataset directory, a RuWikiBench .json file or {HUB_PREFIX}REPO[/FILE]")


def _import_json(path: Path) -> tuple[Dataset, Path]:
    from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json
    from ruwikibench.corpus_builder.store import load_dataset, save_dataset

    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    target = cache_root() / "datasets" / f"{path.stem}-{digest}"
    if (target / "manifest.json").exists():
        return load_dataset(target), target
    result = import_ruwikibench_json(path)
    save_dataset(result.dataset, target)
    return result.dataset, target


def hub_endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` (the variable huggingface_hub reads; a mirror) or huggingface.co."""
    import os

    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def download_from_hub(repo_and_file: str, timeout: float = 60.0) -> Path:
    """Fetch ``REPO[/FILE]`` (a Hugging Face dataset repository) into the cache; clear error when unreachable."""
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
            tmp.replace(target)
    except httpx.HTTPStatusError as exc:
        raise DatasetError(
            f"cannot download {url}: the hub answered HTTP {exc.response.status_code}; check OWNER/NAME and the "
            "file name, or download the file elsewhere and pass its path with --dataset"
        ) from exc
    except httpx.HTTPError as exc:
        raise DatasetError(
            f"cannot download {url}: {type(exc).__name__}: {exc}. The hub is unreachable from here: download the "
            "file elsewhere and pass its path with --dataset"
        ) from exc
    return target
