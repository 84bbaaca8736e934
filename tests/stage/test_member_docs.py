"""help(Stage) shows every member with its doc: the string literal under each class attribute of the stage
contract (invisible to help() as it is) ends the class docstring, read from the source only when asked."""

from __future__ import annotations

import pydoc

from ruwikibench.plugin import Stage
from ruwikibench.stage.member_docs import MemberDocs, attribute_docs, with_member_docs


def test_help_of_stage_shows_each_member_and_its_doc() -> None:
    shown = pydoc.render_doc(Stage, renderer=pydoc.plaintext)
    docs = attribute_docs(Stage)
    assert {"name", "metrics", "output_model", "prompt_files", "options_model", "output_keys"} <= set(docs)
    for member, doc in docs.items():
        first = doc.splitlines()[0]
        assert first in shown, f"help(Stage) does not show the doc of {member}"
    assert "name [required]" in shown and "order [100]" in shown
    assert 'The registry name, e.g. "ranking"' in shown
    assert shown.index("Members (class attributes") < shown.index("Methods defined here")


def test_subclasses_keep_their_own_docstring_and_the_source_is_read_only_when_asked() -> None:
    class Mine(Stage[dict]):
        """My stage."""

        name = "mine"

    assert Mine.__doc__ == "My stage."

    @with_member_docs
    class Documented:
        """A class."""

        size: int = 3
        """How big."""

    lazy = vars(Documented)["__doc__"]
    assert isinstance(lazy, MemberDocs) and lazy.full == {}  # nothing parsed at import
    assert (
        Documented.__doc__
        == "A class.\n\nMembers (class attributes a subclass sets; the default in brackets):\n\n"
        "size [3]\n    How big.\n"
    )
