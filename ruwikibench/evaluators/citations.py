"""Citation faithfulness (ALCE-style) of a text with ``[n]`` markers, from support verdicts given as input.

Pure: no model here. The judge (:mod:`ruwikibench.evaluators.judges.citations`) asks the checks this module
names and hands the verdicts back.

- **Sentences**: each line of the text is split by razdel; a marker that razdel puts at the start of the next
  sentence ("… в 1991 году. [2] Позже …") or on a sentence of its own goes back to the sentence before it. The
  *claim* is the sentence without its markers.
- **Citation recall** (per cited sentence): 1 if the union of the snippets it cites supports the claim.
  A marker pointing at a source that does not exist adds nothing to the union (ALCE instead zeroes the
  sentence); a sentence whose markers all dangle is unsupported without a check.
- **Citation precision** (per citation): 1 if the sentence is supported and the snippet is needed — it
  supports the claim alone, or removing it from the union breaks support (ALCE's conditions A and B); 0
  otherwise, and always 0 for a dangling marker.
- **Unsupported claims**: sentences with no marker that state checkable facts (a number, a name — a
  capitalised word after the first, or a Latin-script word — and at least ``min_words`` words); counted apart,
  the lead included.
- A check whose verdict is unparseable makes its sentence *unjudged*: counted, never guessed, left out of
  recall and precision.
- **Long snippets**: each snippet is judged through its best-matching window for the claim
  (:func:`best_window`: consecutive razdel sentences of at most ``window_chars`` characters sharing the most
  word stems with the claim), never through a cut of its beginning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field
from razdel import sentenize, tokenize

from ruwikibench.nodes.citations import MARKER, marker_numbers

SentenceStatus = Literal["supported", "unsupported", "unjudged", "uncited"]
_LEADING_MARKERS = re.compile(r"(?:\s*" + MARKER.pattern + r")+")
_LATIN = re.compile(r"[A-Za-z]{2,}")
_STEM = 5


class CitedSentence(BaseModel):
    """One sentence of a text, with the markers attached to it."""

    index: int
    start: int = Field(description="offset of the sentence (markers included) in the text")
    end: int
    text: str = Field(description="the sentence as written, markers included")
    claim: str = Field(description="the sentence without markers")
    numbers: list[int] = Field(
        default_factory=list, description="cited numbers, in order, without duplicates"
    )


class Check(NamedTuple):
    """One question for the judge: do the snippets ``numbers`` (together) support sentence ``sentence``?"""

    sentence: int
    numbers: tuple[int, ...]


class Verdict(BaseModel):
    """The judge's answer to one check; ``supported`` None = unparseable (or failed): never guessed."""

    supported: bool | None
    probability: float | None = None


class SentenceScore(BaseModel):
    index: int
    claim: str
    numbers: list[int]
    missing: list[int] = Field(default_factory=list, description="cited numbers with no source")
    status: SentenceStatus
    checkable: bool = Field(default=False, description="uncited sentences: states a checkable fact")
    precise: dict[int, int] = Field(default_factory=dict, description="judged sentences: citation -> 0/1")


class CitationScores(BaseModel):
    """Counts and shares over one text (or several, see :func:`combine`)."""

    sentences: int = 0
    cited: int = Field(default=0, description="sentences with at least one marker")
    supported: int = 0
    unsupported: int = 0
    unjudged: int = 0
    uncited: int = 0
    unsupported_claims: int = Field(default=0, description="uncited sentences stating checkable facts")
    citations: int = Field(default=0, description="citations of judged sentences")
    precise_citations: int = 0
    missing_citations: int = Field(default=0, description="markers pointing at no source")

    @property
    def citation_recall(self) -> float | None:
        judged = self.supported + self.unsupported
        return self.supported / judged if judged else None

    @property
    def citation_precision(self) -> float | None:
        return self.precise_citations / self.citations if self.citations else None

    @property
    def unsupported_share(self) -> float | None:
        return self.unsupported_claims / self.sentences if self.sentences else None

    def metrics(self) -> dict[str, float]:
        """The shares that are defined, and the counts, as floats."""
        out = {k: float(v) for k, v in self.model_dump().items()}
        for key in ("citation_recall", "citation_precision", "unsupported_share"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


# -- sentences -----------------------------------------------------------------------------------------


def split_sentences(text: str) -> list[CitedSentence]:
    """The sentences of ``text`` (line by line, razdel within a line) with their markers attached: markers
    opening a sentence go to the sentence before it on the line; a line of bare markers goes to the sentence
    before it (to the next one when it comes first)."""
    text = text or ""
    spans: list[list[int]] = []
    lone: list[tuple[int, int]] = []
    offset = 0
    for line in text.split("\n"):
        first = True
        for piece in sentenize(line):
            start, end = offset + piece.start, offset + piece.stop
            lead = _LEADING_MARKERS.match(text, start, end)
            if lead and not first and spans:
                spans[-1][1] = lead.end()
                start = lead.end()
            first = False
            if not text[start:end].strip():
                continue
            if lead and lead.end() >= len(text[:end].rstrip()):  # nothing but markers
                lone.append((start, end))
                continue
            spans.append([start, end])
        offset += len(line) + 1
    sentences = [_sentence(i, text, start, end) for i, (start, end) in enumerate(spans)]
    return _attach_lone(sentences, text, lone)


def _attach_lone(
    sentences: list[CitedSentence], text: str, lone: list[tuple[int, int]]
) -> list[CitedSentence]:
    """Numbers of marker-only pieces added to the sentence before them (or the first sentence after them)."""
    for start, end in lone:
        before = [s for s in sentences if s.end <= start]
        target = before[-1] if before else next((s for s in sentences if s.start >= end), None)
        if target is None:
            continue
        for number in _numbers(text[start:end]):
            if number not in target.numbers:
                target.numbers.append(number)
    return sentences


def _numbers(text: str) -> list[int]:
    numbers: dict[int, None] = {}
    for match in MARKER.finditer(text):
        for number in marker_numbers(match.group(1)):
            numbers.setdefault(number, None)
    return list(numbers)


def _sentence(index: int, text: str, start: int, end: int) -> CitedSentence:
    while start < end and text[start].isspace():
        start += 1
    raw = text[start:end].rstrip()
    return CitedSentence(
        index=index, start=start, end=start + len(raw), text=raw, claim=claim_text(raw), numbers=_numbers(raw)
    )


def claim_text(sentence: str) -> str:
    """A sentence without markers: whitespace collapsed, no space left before punctuation."""
    text = " ".join(MARKER.sub(" ", sentence).split())
    return re.sub(r"\s+([.,;:!?…)])", r"\1", text).strip()


def is_checkable(claim: str, min_words: int = 4) -> bool:
    """Does an uncited sentence state a checkable fact: a number, or a name (a capitalised word after the
    first, or a Latin-script word), in a sentence of at least ``min_words`` words."""
    words = [t.text for t in tokenize(claim) if any(c.isalnum() for c in t.text)]
    if len(words) < min_words:
        return False
    if any(any(c.isdigit() for c in w) for w in words):
        return True
    if any(w[0].isupper() for w in words[1:]):
        return True
    return bool(_LATIN.search(claim))


# -- best-matching window of a long snippet ---------------------------------------------------------------


class Window(BaseModel):
    start: int
    end: int
    text: str
    overlap: int = Field(description="distinct claim stems found in the window")


def stems(text: str) -> set[str]:
    """Lower-cased word prefixes (5 characters) of words of 3+ letters or digits: a crude Russian stemmer."""
    out = set()
    for token in tokenize(text.lower().replace("ё", "е")):
        word = token.text
        if len(word) >= 3 and word.isalnum() or word.isdigit():
            out.add(word[:_STEM])
    return out


def best_window(passage: str, claim: str, window_chars: int) -> Window:
    """The run of consecutive sentences of ``passage`` (at most ``window_chars`` characters) that shares the
    most stems with ``claim``; the whole passage when it fits; the earliest window on ties. A single sentence
    longer than the window is cut to it."""
    if len(passage) <= window_chars:
        return Window(start=0, end=len(passage), text=passage, overlap=len(stems(claim) & stems(passage)))
    wanted = stems(claim)
    pieces = [(s.start, s.stop) for s in sentenize(passage)] or [(0, len(passage))]
    best: Window | None = None
    for first in range(len(pieces)):
        start = pieces[first][0]
        end = min(pieces[first][1], start + window_chars)
        for _, stop in pieces[first + 1 :]:
            if stop - start > window_chars:
                break
            end = stop
        overlap = len(wanted & stems(passage[start:end]))
        if best is None or overlap > best.overlap:
            best = Window(start=start, end=end, text=passage[start:end], overlap=overlap)
    assert best is not None
    return best


# -- checks and scores ------------------------------------------------------------------------------------


def pending_checks(
    sentence: CitedSentence, available: Iterable[int], verdicts: Mapping[Check, Verdict]
) -> list[Check]:
    """The checks still needed to score ``sentence`` given the verdicts known so far (ALCE's order: the union;
    if it supports, each snippet alone; for a snippet that does not, the union without it). Empty = done."""
    have = set(available)
    valid = tuple(sorted(n for n in sentence.numbers if n in have))
    if not valid:
        return []
    union = Check(sentence.index, valid)
    if union not in verdicts:
        return [union]
    if verdicts[union].supported is not True or len(valid) == 1:
        return []
    singles = [Check(sentence.index, (n,)) for n in valid]
    missing = [c for c in singles if c not in verdicts]
    if missing:
        return missing
    rest = [
        Check(sentence.index, tuple(m for m in valid if m != c.numbers[0]))
        for c in singles
        if verdicts[c].supported is False
    ]
    return [c for c in rest if c not in verdicts]


def score_sentence(
    sentence: CitedSentence, available: Iterable[int], verdicts: Mapping[Check, Verdict], min_words: int = 4
) -> SentenceScore:
    """Status and per-citation precision of one sentence from the verdicts of its checks."""
    have = set(available)
    base = SentenceScore(
        index=sentence.index,
        claim=sentence.claim,
        numbers=sentence.numbers,
        missing=[n for n in sentence.numbers if n not in have],
        status="uncited",
    )
    if not sentence.numbers:
        return base.model_copy(update={"checkable": is_checkable(sentence.claim, min_words)})
    valid = tuple(sorted(n for n in sentence.numbers if n in have))
    zero = {n: 0 for n in sentence.numbers}
    if not valid:
        return base.model_copy(update={"status": "unsupported", "precise": zero})
    if pending_checks(sentence, have, verdicts):
        raise ValueError(
            f"sentence {sentence.index}: verdicts missing for {pending_checks(sentence, have, verdicts)}"
        )
    union = verdicts[Check(sentence.index, valid)].supported
    if union is None:
        return base.model_copy(update={"status": "unjudged"})
    if not union:
        return base.model_copy(update={"status": "unsupported", "precise": zero})
    precise = dict(zero)
    for number in valid:
        needed = _needed(sentence.index, number, valid, verdicts)
        if needed is None:
            return base.model_copy(update={"status": "unjudged"})
        precise[number] = int(needed)
    return base.model_copy(update={"status": "supported", "precise": precise})


def _needed(
    index: int, number: int, valid: tuple[int, ...], verdicts: Mapping[Check, Verdict]
) -> bool | None:
    """Is citation ``number`` needed in a supported sentence: alone supports, or the rest alone does not."""
    if len(valid) == 1:
        return True
    alone = verdicts[Check(index, (number,))].supported
    if alone is None or alone:
        return alone
    rest = verdicts[Check(index, tuple(n for n in valid if n != number))].supported
    return None if rest is None else not rest


def tally(scores: Iterable[SentenceScore]) -> CitationScores:
    """Counts over scored sentences."""
    out = CitationScores()
    for s in scores:
        out.sentences += 1
        out.missing_citations += len(s.missing)
        if s.status == "uncited":
            out.uncited += 1
            out.unsupported_claims += int(s.checkable)
            continue
        out.cited += 1
        if s.status == "unjudged":
            out.unjudged += 1
            continue
        out.supported += int(s.status == "supported")
        out.unsupported += int(s.status == "unsupported")
        out.citations += len(s.precise)
        out.precise_citations += sum(s.precise.values())
    return out


def combine(parts: Iterable[CitationScores]) -> CitationScores:
    """The counts of several texts added up (micro-averaged shares)."""
    total = CitationScores()
    for part in parts:
        for key, value in part.model_dump().items():
            setattr(total, key, getattr(total, key) + value)
    return total


def score_text(
    text: str, available: Iterable[int], verdicts: Mapping[Check, Verdict], min_words: int = 4
) -> tuple[list[SentenceScore], CitationScores]:
    """Every sentence of ``text`` scored, and the counts (every check must have a verdict)."""
    have = set(available)
    scored = [score_sentence(s, have, verdicts, min_words) for s in split_sentences(text)]
    return scored, tally(scored)
