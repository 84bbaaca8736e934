"""On-disk cache of fetch results, keyed by URL: what makes an interrupted build resume without refetching.

Layout: ``<dir>/<2 hex>/<sha256 of the URL>.json`` (the :class:`FetchResult` without its body) and, for
successful fetches, ``….body`` with the raw bytes. The body is written before the metadata and both through a
temporary file + rename, so an entry is either complete or absent — never half written.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ruwikibench.corpus_builder.web.safety import STRICT
from ruwikibench.corpus_builder.web.types import FetchResult
from ruwikibench.storage.durable import replace_durably


def url_key(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    replace_durably(tmp, path)


class PageCache:
    """Fetch results by URL. Only final outcomes are stored (see :attr:`FetchResult.transient`)."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def _paths(self, url: str) -> tuple[Path, Path]:
        key = url_key(url)
        folder = self.dir / key[:2]
        return folder / f"{key}.json", folder / f"{key}.body"

    def get(self, url: str, policy: str = STRICT) -> FetchResult | None:
        """The cached result of ``url`` if it is valid under the address ``policy`` now in force.

        A result fetched under the strict policy holds under any policy, except a refusal (a looser policy
        may allow the address); a result fetched under a looser policy holds only under that same policy
        (it may come from an internal address)."""
        meta_path, body_path = self._paths(url)
        if not meta_path.exists():
            return None
        try:
            result = FetchResult.model_validate_json(meta_path.read_bytes())
            if result.url != url:  # a sha256 collision would be news; treat as a miss
                return None
            if result.policy != policy and (result.policy != STRICT or result.reason == "blocked_address"):
                return None
            if result.ok:
                result.body = body_path.read_bytes()
        except (OSError, ValueError):
            return None  # unreadable entry: fetch again and overwrite
        result.cached = True
        return result

    def put(self, result: FetchResult) -> None:
        meta_path, body_path = self._paths(result.url)
        meta_path.parent.mkdir(parents=True, exist_ok=True)
        if result.ok:
            _write_atomic(body_path, result.body)
        meta = result.model_dump(mode="json", exclude={"body", "cached"})
        _write_atomic(meta_path, json.dumps(meta, ensure_ascii=False).encode("utf-8"))

    def __len__(self) -> int:
        return sum(1 for _ in self.dir.glob("*/*.json"))
