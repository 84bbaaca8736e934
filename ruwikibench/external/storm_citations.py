"""The citation numbers of STORM's polished article, mapped back to the draft's numbers.

STORM saves ``url_to_info.json`` for the draft (``storm_gen_article.txt``). Polishing then writes a lead
(``# summary``, its markers in the draft's numbers), puts it in front of the draft's sections (rewritten by
the LLM when ``remove_duplicate`` is on) and renumbers every marker by first appearance, lead first
(``StormArticle.reorder_reference_index``); the new numbers are never saved. So a polished number is read back
through the text both files share: each run of adjacent markers is keyed by its section heading and the
sentence just before it; a run whose key occurs in both files pairs the polished numbers with the draft's,
position by position. A polished number gets a draft number only when every pairing agrees and no other
polished number claims that draft number (the renumbering is one-to-one); any other number — e.g. one cited in
the lead only — is unresolved, never guessed. STORM renumbers single ``[n]`` markers only: a grouped marker
(``[1, 2]``, written by the lead's model) keeps the draft's numbers, so its numbers are ambiguous and left
unresolved too.
"""

from __future__ import annotations

import re
from collections import defaultdict

from pydantic import BaseModel, Field

from ruwikibench.nodes.citations import MARKER, marker_numbers

# a run of markers: '[1][2]', '[1] [2]', '[1], [2]', '[1, 2]'
_RUN = re.compile(rf"{MARKER.pattern}(?:[\s,;]*{MARKER.pattern})*")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_SINGLE = re.compile(r"\[(\d+)\]")  # what STORM renumbers (ArticleTextProcessing.parse_citation_indices)
Key = tuple[str, str, int]  # (section heading, sentence before the run, occurrence of that pair)


class MarkerMap(BaseModel):
    """Polished number -> draft number for every polished number that could be read back, and the rest."""

    mapped: dict[int, int] = Field(default_factory=dict)
    unresolved: list[int] = Field(
        default_factory=list, description="polished numbers left without a draft number"
    )
    conflicting: list[int] = Field(
        default_factory=list, description="of those, the ones paired inconsistently"
    )


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold().replace("ё", "е")).split())


def _sections(text: str) -> list[tuple[str, str]]:
    """(normalized heading, body) of each '#' section of a STORM text; text before any heading has heading
    ''."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in text.replace("\r\n", "\n").split("\n"):
        match = re.match(r"^#{1,6}\s+(.+?)\s*#*\s*$", line.strip())
        if match:
            out.append((_normal(match.group(1)), []))
        else:
            out[-1][1].append(line)
    return [(heading, "\n".join(body)) for heading, body in out]


def marker_runs(text: str) -> dict[Key, list[int]]:
    """Every run of markers of a text keyed by (section heading, the sentence before it, occurrence)."""
    runs: dict[Key, list[int]] = {}
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for heading, body in _sections(text):
        start = 0
        for match in _RUN.finditer(body):
            before = _SENTENCE_END.split(MARKER.sub(" ", body[start : match.start()]).strip())[-1]
            start = match.end()
            sentence = _normal(before)
            if not sentence:
                continue
            key = (heading, sentence, seen[(heading, sentence)])
            seen[(heading, sentence)] += 1
            singles = _SINGLE.findall(match.group(0))
            if len(singles) == len(MARKER.findall(match.group(0))):  # a grouped marker is not renumbered
                runs[key] = [int(n) for n in singles]
    return runs


def all_numbers(text: str) -> list[int]:
    """Every number cited in a text, in order of first appearance."""
    return list(dict.fromkeys(n for m in MARKER.finditer(text) for n in marker_numbers(m.group(1))))


def map_polished(polished: str, draft: str) -> MarkerMap:
    """Polished number -> draft number, read from the runs of markers both texts share."""
    pairs: dict[int, set[int]] = defaultdict(set)
    draft_runs = marker_runs(draft)
    for key, numbers in marker_runs(polished).items():
        other = draft_runs.get(key)
        if other is not None and len(other) == len(numbers):
            for p, d in zip(numbers, other, strict=True):
                pairs[p].add(d)
    claimed: dict[int, list[int]] = defaultdict(list)
    for p, ds in pairs.items():
        if len(ds) == 1:
            claimed[next(iter(ds))].append(p)
    mapped = {ps[0]: d for d, ps in claimed.items() if len(ps) == 1}
    grouped = {
        n
        for m in MARKER.finditer(polished)
        if not _SINGLE.fullmatch(m.group(0))
        for n in marker_numbers(m.group(1))
    }
    mapped = {p: d for p, d in mapped.items() if p not in grouped}
    cited = all_numbers(polished)
    unresolved = [p for p in cited if p not in mapped]
    conflicting = [p for p in unresolved if p in pairs]
    return MarkerMap(mapped=dict(sorted(mapped.items())), unresolved=unresolved, conflicting=conflicting)
