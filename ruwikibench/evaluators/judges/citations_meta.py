"""Meta-evaluation of the support judge on hand-labelled sentence–passage pairs (``judge citations-meta``).

The pairs (``support_pairs/pairs.jsonl``, rules in its README) hold the claim and, for the passage, only where
it is in the shared Ruwiki sample (article, source file, character range) and a hash of it: the source texts
are not copied into the project. Each scorer gives every pair a probability of "supported"; with a threshold
it becomes a yes/no verdict compared with the label (supported = positive; contradicted, partial and unrelated
= negative): accuracy, precision, recall, F1, ROC AUC from the probabilities (ties count half), accuracy per
label. Pairs a scorer could not answer (unparseable, failed call) are counted and left out, never guessed.

Scorers: the ``support`` model of a run config (the local model or any endpoint), and a no-LLM baseline — the
cosine of the claim's and the passage's embeddings above a threshold.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from ruwikibench.conf.config import CitationsConfig
from ruwikibench.evaluators.judges.citations import ask_support, support_prompt
from ruwikibench.models.embeddings import Embedder
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary

PAIRS_DIR = Path(__file__).parent / "support_pairs"
DEFAULT_PAIRS = PAIRS_DIR / "pairs.jsonl"
SAMPLE_FILE = "ruwikibench_articles.json"
Label = Literal["supported", "contradicted", "partial", "unrelated"]
LABELS: tuple[Label, ...] = ("supported", "contradicted", "partial", "unrelated")


class FixtureError(ValueError):
    """The pairs file or the sample it points into cannot be read; the message names the file and the pair."""


class SampleMissing(FixtureError):
    """The shared Ruwiki sample is not on this machine (tests skip)."""


class SupportPair(BaseModel):
    id: str
    label: Label
    claim: str
    article: str = Field(description="article_name in the sample")
    file: str = Field(description="the source's file name in the sample (source_N.txt)")
    start: int
    end: int
    sha256: str = Field(description="first 16 hex digits of the passage's sha256")
    passage: str = ""

    @property
    def supported(self) -> bool:
        return self.label == "supported"


def find_sample(explicit: str | Path | None = None) -> Path:
    """The sample JSON: ``explicit``, else ``$RUWIKIBENCH_SAMPLE``, else ``shared/data/ruwiki`` beside the
    working directory or the package, or one of their parents."""
    given = explicit or os.environ.get("RUWIKIBENCH_SAMPLE")
    if given:
        path = Path(given)
        path = path / SAMPLE_FILE if path.is_dir() else path
        if path.is_file():
            return path
        raise SampleMissing(f"{given}: no {SAMPLE_FILE} (the shared Ruwiki sample)")
    for base in (Path.cwd(), Path(__file__).resolve()):
        for parent in (base, *base.parents):
            candidate = parent / "shared" / "data" / "ruwiki" / SAMPLE_FILE
            if candidate.is_file():
                return candidate
    raise SampleMissing(
        f"the shared Ruwiki sample ({SAMPLE_FILE}) was not found; pass --sample or set RUWIKIBENCH_SAMPLE"
    )


def load_pairs(path: str | Path | None = None, sample: str | Path | None = None) -> list[SupportPair]:
    """The labelled pairs with their passages read from the sample (each checked against its hash)."""
    path = Path(path) if path else DEFAULT_PAIRS
    pairs = _read_pairs(path)
    sample_path = find_sample(sample)
    try:
        articles = json.loads(sample_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FixtureError(f"{sample_path}: cannot read the sample: {exc}") from exc
    texts = {(a["article_name"], s["file"]): s["source_text"] for a in articles for s in a.get("sources", [])}
    for pair in pairs:
        text = texts.get((pair.article, pair.file))
        if text is None:
            raise FixtureError(
                f"{path}: pair {pair.id}: {pair.article!r} / {pair.file} is not in {sample_path}"
            )
        passage = text[pair.start : pair.end]
        if hashlib.sha256(passage.encode()).hexdigest()[:16] != pair.sha256:
            raise FixtureError(
                f"{path}: pair {pair.id}: the passage at {pair.start}:{pair.end} of {pair.file} "
                f"does not match its hash (another version of the sample?)"
            )
        pair.passage = passage
    return pairs


def _read_pairs(path: Path) -> list[SupportPair]:
    if not path.is_file():
        raise FixtureError(f"{path}: pairs file not found")
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            pairs.append(SupportPair.model_validate_json(line))
        except ValidationError as exc:
            error = exc.errors()[0]
            raise FixtureError(
                f"{path}:{number}: field '{'.'.join(map(str, error['loc']))}': {error['msg']}"
            ) from exc
    return pairs


def balanced(pairs: Sequence[SupportPair], limit: int | None) -> list[SupportPair]:
    """The first ``limit`` pairs taken round-robin over the labels (each label in file order), so a small
    measurement keeps every label; all pairs in file order when ``limit`` is None."""
    if limit is None:
        return list(pairs)
    queues = {label: [p for p in pairs if p.label == label] for label in LABELS}
    out: list[SupportPair] = []
    while len(out) < limit and any(queues.values()):
        for label in LABELS:
            if queues[label] and len(out) < limit:
                out.append(queues[label].pop(0))
    return out


class Agreement(BaseModel):
    """One scorer's agreement with the labels."""

    scorer: str
    threshold: float
    n: int = Field(description="pairs with a probability")
    unparsed: int = Field(description="pairs the scorer could not answer (left out)")
    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    auc: float | None
    per_label: dict[str, float] = Field(default_factory=dict, description="share judged right, per label")
    best_threshold: float | None = Field(
        default=None, description="the threshold with the best accuracy here"
    )
    best_accuracy: float | None = Field(
        default=None, description="accuracy at best_threshold (chosen on these pairs: optimistic)"
    )
    loo_accuracy: float | None = Field(
        default=None,
        description="accuracy with the threshold chosen on the other "
        "pairs, each pair in turn (leave-one-out: an honest estimate)",
    )
    probabilities: dict[str, float | None] = Field(
        default_factory=dict, description="pair id -> P(supported)"
    )


def roc_auc(labels: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Probability that a positive outscores a negative (ties count half); None without both classes."""
    positives = [s for s, y in zip(scores, labels) if y]
    negatives = [s for s, y in zip(scores, labels) if not y]
    if not positives or not negatives:
        return None
    pos, neg = np.asarray(positives)[:, None], np.asarray(negatives)[None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def agreement(
    scorer: str, pairs: Sequence[SupportPair], probabilities: Sequence[float | None], threshold: float
) -> Agreement:
    """Accuracy / precision / recall / F1 at ``threshold`` and AUC over the pairs that have a probability."""
    answered = [(p, prob) for p, prob in zip(pairs, probabilities, strict=True) if prob is not None]
    truth = [p.supported for p, _ in answered]
    said = [prob >= threshold for _, prob in answered]
    tp = sum(t and s for t, s in zip(truth, said))
    fp = sum(s and not t for t, s in zip(truth, said))
    fn = sum(t and not s for t, s in zip(truth, said))
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    per_label: dict[str, float] = {}
    for label in LABELS:
        rows = [t == s for (p, _), t, s in zip(answered, truth, said) if p.label == label]
        if rows:
            per_label[label] = sum(rows) / len(rows)
    return Agreement(
        scorer=scorer,
        threshold=threshold,
        n=len(answered),
        unparsed=len(pairs) - len(answered),
        accuracy=sum(t == s for t, s in zip(truth, said)) / len(answered) if answered else None,
        precision=precision,
        recall=recall,
        f1=f1,
        auc=roc_auc(truth, [prob for _, prob in answered]),
        per_label=per_label,
        probabilities={p.id: prob for p, prob in zip(pairs, probabilities)},
    )


def best_threshold(truth: Sequence[bool], scores: Sequence[float]) -> tuple[float, float] | None:
    """(threshold, accuracy) maximizing accuracy of ``score >= threshold``; candidates are the midpoints
    between neighbouring distinct scores and one beyond each end; ties go to the lowest threshold."""
    if not scores:
        return None
    values = np.unique(np.asarray(scores, dtype=np.float64))
    candidates = np.concatenate([[values[0] - 1e-6], (values[:-1] + values[1:]) / 2, [values[-1] + 1e-6]])
    said = np.asarray(scores)[None, :] >= candidates[:, None]
    accuracy = (said == np.asarray(truth)[None, :]).mean(axis=1)
    best = int(np.argmax(accuracy))
    return float(candidates[best]), float(accuracy[best])


def leave_one_out_accuracy(truth: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Each pair judged with the threshold :func:`best_threshold` picks on all the other pairs."""
    if len(scores) < 2:
        return None
    right = 0
    for i in range(len(scores)):
        chosen = best_threshold([*truth[:i], *truth[i + 1 :]], [*scores[:i], *scores[i + 1 :]])
        assert chosen is not None
        right += (scores[i] >= chosen[0]) == truth[i]
    return right / len(scores)


def calibrated(result: Agreement, pairs: Sequence[SupportPair]) -> Agreement:
    """The agreement with the best threshold on these pairs and the leave-one-out accuracy filled in."""
    answered = [
        (p.supported, result.probabilities[p.id]) for p in pairs if result.probabilities.get(p.id) is not None
    ]
    truth = [t for t, _ in answered]
    scores = [float(s) for _, s in answered]  # type: ignore[arg-type]
    best = best_threshold(truth, scores)
    return result.model_copy(
        update={
            "best_threshold": best[0] if best else None,
            "best_accuracy": best[1] if best else None,
            "loo_accuracy": leave_one_out_accuracy(truth, scores),
        }
    )


async def llm_probabilities(
    pairs: Sequence[SupportPair], llm: LLM, options: CitationsConfig, prompts: PromptLibrary
) -> list[float | None]:
    """P(supported) of each pair from the support model (None = unparseable or failed)."""

    async def one(pair: SupportPair) -> float | None:
        prompt = support_prompt(prompts, options, pair.article, pair.claim, pair.passage.strip())
        fields = await ask_support(llm, prompt, options)
        return fields.get("probability")  # type: ignore[return-value]

    return list(await asyncio.gather(*(one(p) for p in pairs)))


def cosine_probabilities(pairs: Sequence[SupportPair], embedder: Embedder) -> list[float | None]:
    """The no-LLM baseline: cosine of the claim's (query) and the passage's (passage) embeddings."""
    if not pairs:
        return []
    claims = np.asarray(embedder.embed([p.claim for p in pairs], "query"), dtype=np.float64)
    passages = np.asarray(embedder.embed([p.passage for p in pairs], "passage"), dtype=np.float64)
    return [float(v) for v in (claims * passages).sum(axis=1)]


def agreement_row(result: Agreement) -> dict[str, str]:
    """A table row: scorer, threshold, n, unparsed, accuracy, precision, recall, F1, AUC, per-label
    accuracy."""

    def fmt(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    row = {
        "scorer": result.scorer,
        "threshold": f"{result.threshold:g}",
        "n": str(result.n),
        "unparsed": str(result.unparsed),
        "accuracy": fmt(result.accuracy),
        "precision": fmt(result.precision),
        "recall": fmt(result.recall),
        "F1": fmt(result.f1),
        "AUC": fmt(result.auc),
    }
    row.update({f"acc {label}": fmt(result.per_label.get(label)) for label in LABELS})
    row["best threshold (acc)"] = (
        "—" if result.best_threshold is None else f"{result.best_threshold:.3f} ({fmt(result.best_accuracy)})"
    )
    row["LOO acc"] = fmt(result.loo_accuracy)
    return row
