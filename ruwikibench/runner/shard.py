"""A run split over machines: ``run … --shard I/N`` runs the articles whose stable hash falls in share I of N.

An article's share is ``sha256(article name) mod N`` (not Python's ``hash()``, which changes between
processes), so every machine computes the same split from the dataset alone, whatever order it lists the
articles in. The run id does not depend on the shard — every shard of one run has the same id, and
``ruwikibench merge`` joins their directories (:mod:`ruwikibench.runner.merge`) — and a shard's directory is
``<run id>.shard-I-of-N``, so shards may share one ``--out`` folder. spec.json's ``shard`` says which share a
directory holds and its articles.
"""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, Field, model_validator

from ruwikibench.conf.config import RunInputError

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class Shard(BaseModel):
    """Share ``index`` (1-based) of ``count``."""

    index: int = Field(ge=1)
    count: int = Field(ge=1)

    @model_validator(mode="after")
    def _index_in_range(self) -> Shard:
        if self.index > self.count:
            raise ValueError(f"shard {self.index}/{self.count}: the index must be between 1 and {self.count}")
        return self

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/4"`` → share 2 of 4; anything else is a :class:`RunInputError` naming ``--shard``."""
        match = _SPEC.match(text)
        if not match:
            raise RunInputError(f"--shard {text!r}: expected I/N, e.g. 2/4 (share I of N, 1 ≤ I ≤ N)")
        index, count = int(match.group(1)), int(match.group(2))
        if count < 1 or not 1 <= index <= count:
            raise RunInputError(f"--shard {text!r}: I must be between 1 and N (N ≥ 1)")
        return cls(index=index, count=count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, article_name: str) -> bool:
        return share_of(article_name, self.count) == self.index

    def directory(self, run_id: str) -> str:
        """The shard's run directory name."""
        return f"{run_id}{self._suffix}"

    def run_id_of(self, directory: str) -> str:
        """The run id in the shard's directory name (:meth:`directory`)."""
        return directory.removesuffix(self._suffix)

    @property
    def _suffix(self) -> str:
        return f".shard-{self.index}-of-{self.count}"


def share_of(article_name: str, count: int) -> int:
    """The share (1…count) an article belongs to: its name's sha256, mod ``count``."""
    digest = hashlib.sha256(article_name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1
