"""The prompt files a node or graph override reads, declared on the function with :func:`uses_prompts` (the
same two ways a :class:`~ruwikibench.stage.contract.Stage` declares its prompts: file names, as its
``prompt_files``, or a pydantic model of :func:`~ruwikibench.conf.config.prompt_slot` fields, as its
options)::

    class DescribePrompts(BaseModel):
        describe: str = prompt_slot("my_pkg:prompts/describe.txt", "title", "texts")

    @uses_prompts(DescribePrompts, "my_pkg:prompts/footer.txt")
    async def describe(state, runtime): ...

When a command loads the config (:func:`ruwikibench.runner.overrides.check_overrides`), every declared file
must exist (and a slot's file use only the fields it names); their sha256 enter the run id and ``spec.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

PROMPTS_ATTRIBUTE = "__ruwikibench_prompts__"
T = TypeVar("T")


@dataclass(frozen=True)
class DeclaredPrompt:
    """One declared prompt file: the name the prompt loader resolves, and the fields the code fills in it
    (None: a bare file name, its fields not checked)."""

    name: str
    fields: tuple[str, ...] | None = None


def uses_prompts(*declared: str | type[BaseModel]) -> Callable[[T], T]:
    """Mark a node or graph override as reading these prompt files: names (``"my_pkg:prompts/a.txt"``, a
    path relative to the config's ``prompts_dir``, an absolute path) or pydantic models whose
    ``prompt_slot`` fields name them (their defaults). Returns the function itself (not a wrapper)."""
    for item in declared:
        if not isinstance(item, str) and not (isinstance(item, type) and issubclass(item, BaseModel)):
            raise TypeError(f"uses_prompts: {item!r} is neither a prompt file name nor a pydantic model")

    def mark(obj: T) -> T:
        setattr(obj, PROMPTS_ATTRIBUTE, (*getattr(obj, PROMPTS_ATTRIBUTE, ()), *declared))
        return obj

    return mark


def slot_prompts(model: type[BaseModel]) -> list[DeclaredPrompt]:
    """The prompt files a model's ``prompt_slot`` fields name by default, with the fields each is given."""
    found = []
    for info in model.model_fields.values():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        fields = extra.get("prompt_fields")
        if isinstance(fields, list):
            found.append(DeclaredPrompt(str(info.default), tuple(str(f) for f in fields)))
    return found


def declared_prompts(obj: Any) -> list[DeclaredPrompt]:
    """The prompt files ``obj`` declares with :func:`uses_prompts` (none: an empty list)."""
    found: list[DeclaredPrompt] = []
    for item in getattr(obj, PROMPTS_ATTRIBUTE, ()):
        found += [DeclaredPrompt(item)] if isinstance(item, str) else slot_prompts(item)
    return found
