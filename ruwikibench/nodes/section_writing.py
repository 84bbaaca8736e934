"""Stage 3's LLM side: compressing a group of snippets into a description (the paper's iterative extend-the-
description loop, or the authors' tree reduction) and writing the section text from the group descriptions by
hierarchical summarization. Every call goes to the ``sections`` role with a prompt file of the stage config.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING

from ruwikibench.conf.builtin_options import SectionsConfig
from ruwikibench.nodes.answers import ask, clean_answer
from ruwikibench.prompts.render import numbered_texts
from ruwikibench.stage.context import StageContext

if TYPE_CHECKING:
    from ruwikibench.nodes.section_spec import SectionSpec

ROLE = "sections"  # falls back to the writer model when the config names none


def chunked(items: Sequence[str], size: int) -> list[list[str]]:
    size = max(1, size)
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


# --------------------------------------------------------------------------- embeddings


def ask_writer(
    context: StageContext, prompt_name: str, title: str, max_tokens: int | None, **fields: object
) -> Awaitable[str]:
    """:func:`~ruwikibench.nodes.answers.ask` for this stage's role, the answer cleaned of a repeated
    ``title``."""
    return ask(
        context, ROLE, prompt_name, max_tokens=max_tokens, clean=lambda t: clean_answer(t, title), **fields
    )


async def describe_iterative(
    context: StageContext, article: str, section: str, texts: list[str]
) -> tuple[str, int]:
    """The paper's loop: describe the first ``chunk_size`` texts, then extend the description chunk by
    chunk."""
    cfg = context.config.options(SectionsConfig)
    chunks = chunked(texts, cfg.chunk_size)
    common = {"article": article, "section": section}
    description = await ask_writer(
        context,
        cfg.prompt_describe,
        section,
        cfg.describe_max_tokens,
        texts=numbered_texts(chunks[0], cfg.snippet_chars, keep=0.5),
        **common,
    )
    for chunk in chunks[1:]:
        extended = await ask_writer(
            context,
            cfg.prompt_extend,
            section,
            cfg.describe_max_tokens,
            description=description,
            texts=numbered_texts(chunk, cfg.snippet_chars, keep=0.5),
            **common,
        )
        description = extended or description
    return description, len(chunks)


async def describe_tree(
    context: StageContext, article: str, section: str, texts: list[str]
) -> tuple[str, int]:
    """The authors' tree reduction: describe each chunk, then describe chunks of descriptions, until one is
    left."""
    cfg = context.config.options(SectionsConfig)
    level, calls = texts, 0
    chars: int | None = cfg.snippet_chars
    while True:
        chunks = chunked(level, cfg.chunk_size)
        level = await asyncio.gather(
            *(
                ask_writer(
                    context,
                    cfg.prompt_describe,
                    section,
                    cfg.describe_max_tokens,
                    texts=numbered_texts(chunk, chars, keep=0.5),
                    article=article,
                    section=section,
                )
                for chunk in chunks
            )
        )
        calls += len(chunks)
        chars = None  # descriptions are already short
        if len(level) == 1:
            return level[0], calls


def write_prompt(config: SectionsConfig, level: int) -> str:
    return config.prompt_write_lead if level <= 1 else config.prompt_write


async def write_section(
    context: StageContext, article: str, spec: SectionSpec, descriptions: list[str]
) -> tuple[str, int]:
    """Hierarchical summarization: merge descriptions in chunks until one chunk is left, then write the
    section.

    The final write call is made even for a single description.
    """
    cfg = context.config.options(SectionsConfig)
    prompt, calls, level = write_prompt(cfg, spec.level), 0, descriptions
    fields = {"article": article, "section": spec.title}
    while len(level) > cfg.chunk_size:
        chunks = chunked(level, cfg.chunk_size)
        merged = await asyncio.gather(
            *(
                ask_writer(
                    context,
                    prompt,
                    spec.title,
                    cfg.write_max_tokens,
                    materials=numbered_texts(c, None),
                    **fields,
                )
                for c in chunks
            )
        )
        calls += len(chunks)
        level = [m for m in merged if m]
        if not level:
            return "", calls
    text = await ask_writer(
        context, prompt, spec.title, cfg.write_max_tokens, materials=numbered_texts(level, None), **fields
    )
    return text, calls + 1
