"""Asking the model from a prompt file, and cleaning its prose answer: one helper each for every node.

``ask`` formats a prompt file with the given fields, sends it for a role, and returns the cleaned answer (the
reasoning is already removed by the client). ``clean_answer`` strips what small models wrap prose in: code
fences, leading headings, a repeated title, «Описание:»-style labels; ``flatten_headings`` turns heading lines
inside prose into plain paragraphs (the outline owns the headings).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ruwikibench.stage.context import StageContext

_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:краткое описание|описание|текст "
    r"раздела|текст|ответ|раздел)(?:\*\*)?\s*:\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
_HEADING_LINE = re.compile(r"^[ \t]*#{1,6}[ \t]+(.*?)[ \t#]*$", re.MULTILINE)


async def ask(
    context: StageContext,
    role: str,
    prompt_name: str,
    *,
    max_tokens: int | None = None,
    clean: Callable[[str], str] = str.strip,
    **fields: object,
) -> str:
    """Format the prompt file ``prompt_name`` with ``fields``, ask ``role``'s model, return
    ``clean(answer)``."""
    prompt = context.prompts.get(prompt_name).format(**fields)
    completion = await context.llm.complete(role, prompt, max_tokens=max_tokens)
    return clean(completion.text)


def clean_answer(text: str, title: str = "", *, also_drop: Iterable[str] = (), label: bool = True) -> str:
    """Model prose -> plain text: code fences, leading empty lines, headings, a line repeating ``title`` (or
    one of ``also_drop``) removed; with ``label`` a leading «Описание:»-style label too."""
    lines = text.strip().replace("```", "").splitlines()
    drop = {t.strip().lower() for t in (title, *also_drop) if t.strip()}
    while lines:
        head = lines[0].strip()
        bare = head.strip("#*« »\"'").strip().rstrip(":").lower()
        if not head or head.startswith("#") or bare in drop:
            lines.pop(0)
            continue
        break
    body = "\n".join(lines).strip()
    return _LABEL.sub("", body, count=1).strip() if label else body


def flatten_headings(text: str) -> str:
    """Markdown heading lines inside generated prose become plain paragraphs."""
    text = _HEADING_LINE.sub(lambda m: "\n" + m.group(1) + "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
