"""The messages store of a run directory: each text once per file (by sha256), secrets redacted before
hashing, a torn last gzip member skipped on reading and cut off before the next append, file-safe names."""

from __future__ import annotations

import gzip
from pathlib import Path

from ruwikibench.conf.secrets import MASK, register
from ruwikibench.storage.call_log import CallLog, read_shard, shard_path, text_hash, whole_members

SYSTEM = "Ты — редактор энциклопедии. " * 20


def _call(unit: str, prompt: str, answer: str | None = "ответ", **extra: object) -> dict:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    return {"stage": "s", "article": "A", "unit": unit, "messages": messages, "answer": answer} | extra


def _texts(path: Path) -> list[str]:
    return [row["text"] for row in read_shard(path) if "text" in row]


def test_each_text_is_stored_once_per_file_across_batches_and_processes(tmp_path: Path) -> None:
    log = CallLog(tmp_path)
    log.append("s", "A", [_call("u1", "вопрос 1"), _call("u1", "вопрос 2")])
    CallLog(tmp_path).append("s", "A", [_call("u2", "вопрос 1", answer="другой ответ")])  # a resumed run
    path = shard_path(tmp_path, "s", "A")
    assert sorted(_texts(path)) == sorted([SYSTEM, "вопрос 1", "вопрос 2", "ответ", "другой ответ"])
    calls = CallLog(tmp_path).calls("s", "A")
    assert [(c["unit"], c["messages"][1]["content"], c["answer"]) for c in calls] == [
        ("u1", "вопрос 1", "ответ"),
        ("u1", "вопрос 2", "ответ"),
        ("u2", "вопрос 1", "другой ответ"),
    ]
    assert all(c["messages"][0] == {"role": "system", "content": SYSTEM} for c in calls)
    assert len(list(whole_members(path.read_bytes()))) == 2  # one gzip member per batch
    assert gzip.decompress(path.read_bytes()).decode().count(SYSTEM) == 1


def test_texts_are_redacted_before_they_are_hashed_and_written(tmp_path: Path) -> None:
    register("msg-secret-7c1d55")
    CallLog(tmp_path).append(
        "s", "A", [_call("u", "ключ msg-secret-7c1d55 в тексте", error="x msg-secret-7c1d55")]
    )
    raw = gzip.decompress(shard_path(tmp_path, "s", "A").read_bytes()).decode()
    assert "msg-secret-7c1d55" not in raw
    stored = [row for row in read_shard(shard_path(tmp_path, "s", "A")) if "text" in row]
    assert all(row["sha256"] == text_hash(row["text"]) for row in stored)  # the hash names the stored text
    [call] = CallLog(tmp_path).calls("s", "A")
    assert call["messages"][1]["content"] == f"ключ {MASK} в тексте" and call["error"] == f"x {MASK}"


def test_a_torn_last_member_is_skipped_and_cut_off_before_the_next_append(tmp_path: Path) -> None:
    CallLog(tmp_path).append("s", "A", [_call("u1", "целый")])
    path = shard_path(tmp_path, "s", "A")
    whole = path.stat().st_size
    CallLog(tmp_path).append("s", "A", [_call("u2", "оборванный " * 50)])
    path.write_bytes(path.read_bytes()[: whole + 30])  # killed in the middle of the second write
    assert [c["unit"] for c in CallLog(tmp_path).calls("s", "A")] == ["u1"]
    CallLog(tmp_path).append("s", "A", [_call("u3", "после")])
    assert [c["unit"] for c in CallLog(tmp_path).calls("s", "A")] == ["u1", "u3"]
    assert "оборванный" not in gzip.decompress(path.read_bytes()).decode()  # a valid gzip stream again


def test_article_names_become_safe_distinct_file_names(tmp_path: Path) -> None:
    odd = shard_path(tmp_path, "sections", "../Война и мир / том 1")
    assert odd.parent == tmp_path / "sections" and odd.name.startswith("Война_и_мир_том_1-")
    assert shard_path(tmp_path, "s", "a/b") != shard_path(tmp_path, "s", "a_b")
    assert not CallLog(tmp_path / "none").recorded() and CallLog(tmp_path / "none").calls("s", "A") == []


def test_a_file_written_again_after_its_texts_were_forgotten_still_stores_each_text_once(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr("ruwikibench.storage.call_log.KNOWN_FILES", 2)
    log = CallLog(tmp_path)
    for article in ("A", "B", "C", "A"):  # A's texts are forgotten when C is written, read again for A
        log.append("s", article, [_call("u", "вопрос")])
    assert len(log._known) == 2
    assert sorted(_texts(shard_path(tmp_path, "s", "A"))) == sorted([SYSTEM, "вопрос", "ответ"])
    assert len(CallLog(tmp_path).calls("s", "A")) == 2
