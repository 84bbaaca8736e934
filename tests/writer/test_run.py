"""write_article: SQLite-checkpointed session, stop after the outline, edit the file, resume; exports and
trace."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from ruwikibench.storage.call_log import MESSAGES_DIR, CallLog
from ruwikibench.writer.run import WriteError, read_session, serde_allowlist, write_article
from tests.graphs.writer_fixture import TITLE, kind, make_context, prompts_of


def test_stop_edit_resume_export(tmp_path, caplog) -> None:
    context, chat = make_context(tmp_path)
    out = tmp_path / "moscow"
    first = asyncio.run(write_article(context, TITLE, out, review=True))
    assert first.status == "awaiting_outline" and read_session(out).status == "awaiting_outline"
    outline_file = out / "outline.md"
    assert outline_file.read_text(encoding="utf-8").startswith(
        "# Москва\n\n## История\n## География\n### Климат"
    )
    assert Counter(kind(p) for p in prompts_of(chat))["write_section"] == 0

    outline_file.write_text("# Москва\n\n## Экономика\n## Климат и природа\n", encoding="utf-8")
    context2, chat2 = make_context(tmp_path)  # a new process: fresh model, same checkpoint database
    done = asyncio.run(write_article(context2, None, out, resume=True))
    # the checkpointer rebuilt the state's models from the allowlist, without "unregistered type" warnings
    assert not [r for r in caplog.records if "unregistered type" in r.getMessage()]
    assert done.status == "done"
    assert [s.title for s in done.article.sections] == ["Экономика", "Климат и природа"]
    kinds = Counter(kind(p) for p in prompts_of(chat2))
    assert kinds["relevance"] == 0 and kinds["merge"] == 0 and kinds["write_section"] == 2  # nothing reran
    md = done.paths["md"].read_text(encoding="utf-8")
    assert md.startswith("# Москва\n\n") and "## Климат и природа" in md and "## Источники" in md
    data = json.loads(done.paths["json"].read_text(encoding="utf-8"))
    assert [o["title"] for o in data["outline"]] == ["Экономика", "Климат и природа"]
    assert data["references"] and data["sources"] and data["assignments"]
    nodes = {(r["namespace"].split(":")[0], r["node"]) for r in data["trace"]}
    assert {("ranking", "rerank"), ("outline", "merge"), ("", "review_outline"), ("", "assemble")} <= nodes
    assert sum(r["llm_calls"] for r in data["trace"]) == len(chat.calls) + len(chat2.calls)
    session = read_session(out)
    assert session.status == "done" and session.llm_calls == len(chat.calls) + len(chat2.calls)
    kept = CallLog(out / MESSAGES_DIR).calls("writer", TITLE)  # both sessions' calls, messages as sent
    assert sorted(c["messages"][-1]["content"] for c in kept) == sorted(
        m[-1]["content"] for m in chat.calls + chat2.calls
    )
    assert "<details class='sources'>" in done.paths["html"].read_text(encoding="utf-8")


def test_resume_errors(tmp_path) -> None:
    context, _ = make_context(tmp_path)
    with pytest.raises(WriteError, match="no writer session"):
        asyncio.run(write_article(context, None, tmp_path / "none", resume=True))
    out = tmp_path / "done"
    asyncio.run(write_article(context, TITLE, out))
    with pytest.raises(WriteError, match="nothing left to run"):
        asyncio.run(write_article(context, None, out, resume=True))
    with pytest.raises(WriteError, match="not 'Python'"):
        asyncio.run(write_article(context, "Python", out, resume=True))


def test_serde_allowlist_covers_the_writer_state_types() -> None:
    names = {c.__name__ for c in serde_allowlist()}
    assert {
        "OutlineItem",
        "WrittenArticle",
        "SourceSnippet",
        "Assignment",
        "Citation",
        "MarkerStats",
    } <= names
    assert all(c.__module__.startswith("ruwikibench.") for c in serde_allowlist())
