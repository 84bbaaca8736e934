"""Stage 3 units and one graph run on the real Ruwiki sample (skipped when the sample is absent)."""

import asyncio
import hashlib
import re

import numpy as np
import pytest

from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.graphs.sections import STAGE
from ruwikibench.models.embeddings import normalize
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext
from tests.sample import sample_dataset_or_skip


class HashEmbedder:
    id = "hash"

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1
        return normalize(out)


@pytest.fixture(scope="module")
def dataset():
    return sample_dataset_or_skip()


def test_units_on_the_sample(dataset) -> None:
    config = RunConfig(models={"writer": ModelConfig(name="fake")})
    for article in dataset.articles:
        units = STAGE.units(dataset, article, config)
        assert len({u.unit_id for u in units}) == len(units) == len(article.sections())
        for unit in units:
            (spec,) = unit.input["sections"]
            section = article.section(spec["id"])
            cited = set(section.cited_footnotes())
            assert spec["reference"] == section.text() and spec["level"] == section.level
            # every snippet comes from a kept source that one of the section's own paragraphs cites
            assert all(dataset.source(s["source_id"]).footnote_id in cited for s in spec["snippets"])
            # after the dataset filters a section with text always has a snippet (no silent exclusion)
            assert bool(spec["reference"].strip()) <= bool(spec["snippets"])


def test_one_real_section_through_the_graph(dataset) -> None:
    article = dataset.article("COVID-19")
    config = RunConfig(models={"writer": ModelConfig(name="fake")}, sections={"snippet_chars": 300})
    chat = ScriptedChat(lambda m: "Описание фрагментов." if "опиши" in m[-1]["content"] else "Текст раздела.")
    context = StageContext(config, LLM({"writer": chat}), HashEmbedder(), PromptLibrary(), dataset)
    unit = next(
        u for u in STAGE.units(dataset, article, config) if len(u.input["sections"][0]["snippets"]) >= 3
    )
    output = asyncio.run(STAGE.build_graph().compile().ainvoke(unit.input, context=context))
    (result,) = output["results"]
    assert result["status"] == "ok" and result["text"] == "Текст раздела." and result["write_calls"] >= 1
    assert result["calls"] == len(chat.calls)
    assert all(len(m[-1]["content"]) < 5 * 320 + 1500 for m in chat.calls)  # snippet texts capped in prompts
    (record,) = STAGE.checked_score(unit, output, context).records
    assert record.excluded is None and 0 < record.metrics["f1"] < 1 and 0 <= record.metrics["rouge_l"] < 1
