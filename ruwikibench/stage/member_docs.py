"""Class attributes documented the way the stage contract documents them — a string literal right under the
attribute — are invisible to ``help()``. :func:`with_member_docs` makes the class docstring end with them
(parsed from the source when the docstring is first read, never at import), so ``help(Stage)`` shows each
member with its doc."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import TypeVar

T = TypeVar("T", bound=type)


def attribute_docs(cls: type) -> dict[str, str]:
    """Each class attribute of ``cls``'s own body followed by a string literal: name -> that string
    (dedented); {} when the source is not available (a frozen or zipped install)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0]
    docs: dict[str, str] = {}
    if not isinstance(body, ast.ClassDef):
        return docs
    for statement, following in zip(body.body, body.body[1:]):
        target = (
            statement.target
            if isinstance(statement, ast.AnnAssign)
            else statement.targets[0]
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1
            else None
        )
        if (
            isinstance(target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[target.id] = inspect.cleandoc(following.value.value)
    return docs


def members_section(cls: type) -> str:
    """'Members': each documented class attribute of ``cls``, its default (or 'required') and its doc."""
    docs = attribute_docs(cls)
    if not docs:
        return ""
    lines = ["Members (class attributes a subclass sets; the default in brackets):", ""]
    for name, doc in docs.items():
        default = f" [{vars(cls)[name]!r}]" if name in vars(cls) else " [required]"
        lines.append(f"{name}{default}")
        lines += [f"    {line}" if line else "" for line in doc.splitlines()]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


class MemberDocs:
    """A class's ``__doc__`` that adds :func:`members_section` when first read (``help()``, ``pydoc``,
    ``inspect.getdoc``): the source is parsed then, not when the class is imported."""

    def __init__(self, doc: str | None) -> None:
        self.doc = inspect.cleandoc(doc or "")
        self.full: dict[type, str] = {}

    def __get__(self, instance: object, owner: type | None = None) -> str:
        cls = owner if owner is not None else type(instance)
        if cls not in self.full:
            members = members_section(cls)
            self.full[cls] = f"{self.doc}\n\n{members}" if members else self.doc
        return self.full[cls]


def with_member_docs(cls: T) -> T:
    """``cls`` whose docstring, when read, ends with its documented class attributes (:class:`MemberDocs`;
    methods keep their own docstrings, which ``help()`` shows anyway). Subclasses keep their own
    docstrings."""
    # type.__doc__ calls the __get__ of a descriptor found in the class's own dict
    cls.__doc__ = MemberDocs(cls.__doc__)  # type: ignore[assignment]
    return cls
