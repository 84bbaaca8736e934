"""Outline files, re-exported from :mod:`ruwikibench.nodes.outline_file` where they live."""

from ruwikibench.nodes.outline_file import (
    OutlineFileError,
    items_from_headings,
    outline_markdown,
    parse_outline_markdown,
    read_outline_file,
)

__all__ = [
    "OutlineFileError",
    "items_from_headings",
    "outline_markdown",
    "parse_outline_markdown",
    "read_outline_file",
]
