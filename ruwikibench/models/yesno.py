"""Yes/no relevance scores from token log-probabilities (paper section 2.1), with a text fallback.

The model is asked to start its answer with «Да» or «Нет». We find the first *answer* token — after any
``<think>…</think>`` block, whitespace, SentencePiece/BPE markers (``▁``, ``Ġ``), markdown (``**``, ``#``,
``_``), quotes and an optional ``Ответ:``/``Answer:`` label — and read that position's top log-probabilities.
Every alternative is normalized (markers, markdown, quotes and trailing punctuation stripped, lower-cased) and
classified as *yes* (да/yes) or *no* (нет/no); the probabilities of all variants of a class are summed:

- ``p_yes``, ``p_no``: the summed probability mass of the yes / no variants at the answer position;
- ``score`` (the paper's): ``p_yes`` if the answer is yes, else ``1 − p_no``;
- ``p_yes_norm``: ``p_yes / (p_yes + p_no)``.

Without logprobs the answer text is parsed (``source="text"``: score 1.0 or 0.0) so reports can count
fallbacks. An answer that is neither yes nor no is ``source="unparseable"`` with ``score=None`` — never
guessed.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, Field

from ruwikibench.models.types import Completion, TokenLogprob

Answer = Literal["yes", "no"]
ScoreSource = Literal["logprobs", "text", "unparseable"]

YES_WORDS = frozenset({"да", "yes"})
NO_WORDS = frozenset({"нет", "no"})

# Characters that may precede the answer word: whitespace, tokenizer markers, markdown, quotes, bullets.
_LEAD = " \t\r\n\u00a0▁ĠĊ*_#`\"'«»“”„‘’>-•:"
# Characters stripped around a single token before it is classified.
_STRIP = _LEAD + ".,!?;…()[]"
_LABEL = re.compile(r"(ответ|answer|relevant|релевантн\w*)\s*[:\-—]", re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)


class YesNoScore(BaseModel):
    """A parsed relevance judgement."""

    answer: Answer | None = Field(description="the model's answer; None = unparseable")
    score: float | None = Field(description="paper score: P(yes) if yes else 1 − P(no); None if unparseable")
    p_yes: float | None = None
    p_no: float | None = None
    p_yes_norm: float | None = Field(default=None, description="P(yes) / (P(yes) + P(no))")
    source: ScoreSource
    position: int | None = Field(default=None, description="index of the answer token among generated tokens")
    text: str = Field(default="", description="the answer text (reasoning removed), cut to 200 characters")


def normalize_token(token: str) -> str:
    """A token without markers, markdown, quotes, surrounding punctuation; lower-cased."""
    return token.strip(_STRIP).lower()


def classify_token(token: str, *, prefixes: bool = False) -> Answer | None:
    """'yes' / 'no' / None for one token (or word), ignoring markers, markdown, quotes, punctuation, case.

    With ``prefixes`` a non-empty beginning of exactly one class's words counts too («Д» → yes, «Н» → no):
    used when the tokenizer split the answer word itself.
    """
    word = normalize_token(token)
    if word in YES_WORDS:
        return "yes"
    if word in NO_WORDS:
        return "no"
    if prefixes and word:
        yes = any(w.startswith(word) for w in YES_WORDS)
        no = any(w.startswith(word) for w in NO_WORDS)
        if yes != no:
            return "yes" if yes else "no"
    return None


def _skip_reasoning(text: str) -> int | None:
    """Offset just after a leading ``<think>…</think>`` block (0 if none); None if the block never closes."""
    stripped = text.lstrip()
    if not stripped.startswith("<think>"):
        return 0
    end = text.find("</think>")
    return None if end < 0 else end + len("</think>")


def answer_offset(text: str) -> int | None:
    """Character offset of the first answer word in ``text``, or None when there is no answer."""
    offset = _skip_reasoning(text)
    if offset is None:
        return None
    while True:
        while offset < len(text) and text[offset] in _LEAD:
            offset += 1
        label = _LABEL.match(text, offset)
        if not label:
            break
        offset = label.end()
    return offset if offset < len(text) else None


def parse_answer_text(text: str) -> Answer | None:
    """The yes/no answer of a plain text (reasoning, markdown and an 'Ответ:' label skipped)."""
    offset = answer_offset(text)
    if offset is None:
        return None
    word = _WORD.match(text, offset)
    return classify_token(word.group(0)) if word else None


def _answer_position(tokens: list[TokenLogprob]) -> tuple[int, str, bool] | None:
    """The generated token holding the first answer character: its index, the whole answer word, and whether
    the token is only part of that word (the tokenizer split «Да» into «Д» + «а»)."""
    joined = "".join(t.token for t in tokens)
    offset = answer_offset(joined)
    if offset is None:
        return None
    match = _WORD.match(joined, offset)
    word = match.group(0) if match else joined[offset]
    word_end = offset + len(word)
    end = 0
    for index, token in enumerate(tokens):
        end += len(token.token)
        if end > offset:
            return index, word, end < word_end
    return None


def _class_masses(position: TokenLogprob, *, prefixes: bool) -> tuple[float, float]:
    """Summed probabilities of the yes and the no variants among the alternatives at one position."""
    alternatives = {top.token: top.logprob for top in position.top}
    alternatives.setdefault(position.token, position.logprob)
    p_yes = p_no = 0.0
    for token, logprob in alternatives.items():
        label = classify_token(token, prefixes=prefixes)
        if label == "yes":
            p_yes += math.exp(logprob)
        elif label == "no":
            p_no += math.exp(logprob)
    return min(p_yes, 1.0), min(p_no, 1.0)


def _from_text(text: str) -> YesNoScore:
    answer = parse_answer_text(text)
    if answer is None:
        return YesNoScore(answer=None, score=None, source="unparseable", text=text[:200])
    value = 1.0 if answer == "yes" else 0.0
    return YesNoScore(answer=answer, score=value, p_yes_norm=value, source="text", text=text[:200])


def score_yes_no(completion: Completion) -> YesNoScore:
    """Score a yes/no completion from its logprobs, falling back to the text when there are none."""
    text = completion.text or completion.raw_text
    tokens = completion.logprobs
    if not tokens:
        return _from_text(text)
    found = _answer_position(tokens)
    if found is None:
        return _from_text(text)
    position, word, partial = found
    answer = classify_token(word) if partial else classify_token(tokens[position].token)
    if answer is None:  # not a yes/no token (e.g. the model starts with an explanation): read the text
        return _from_text(text)
    p_yes, p_no = _class_masses(tokens[position], prefixes=partial)
    norm = p_yes / (p_yes + p_no) if p_yes + p_no > 0 else None
    score = p_yes if answer == "yes" else 1.0 - p_no
    return YesNoScore(
        answer=answer,
        score=score,
        p_yes=p_yes,
        p_no=p_no,
        p_yes_norm=norm,
        source="logprobs",
        position=position,
        text=text[:200],
    )
