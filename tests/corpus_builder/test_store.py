from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruwikibench.corpus_builder.ruwikibench_json import import_records
from ruwikibench.corpus_builder.store import DatasetStoreError, load_dataset, read_manifest, save_dataset
from tests.corpus_builder.test_ruwikibench_json import record


def test_round_trip_is_exact_and_manifest_has_counts(tmp_path: Path) -> None:
    ds = import_records([record("Один"), record("Два")], "mem.json").dataset
    save_dataset(ds, tmp_path / "d", errors=["in.json: article 'x': no 'html'"])
    loaded = load_dataset(tmp_path / "d")
    assert loaded == ds
    assert loaded.dataset_id == ds.dataset_id
    assert loaded.params == ds.params
    manifest = read_manifest(tmp_path / "d")
    assert manifest["dataset_id"] == ds.dataset_id
    assert manifest["counts"] == {"articles": 2, "sources": 8, "snippets": len(ds.snippets)}
    assert manifest["params"]["window"] == 600
    assert manifest["errors"] == ["in.json: article 'x': no 'html'"]
    lines = (tmp_path / "d" / "sources.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 8 and json.loads(lines[0])["id"] == "Один/source_1"


def test_saving_twice_gives_identical_files(tmp_path: Path) -> None:
    ds = import_records([record()], "mem.json").dataset
    save_dataset(ds, tmp_path / "a")
    save_dataset(load_dataset(tmp_path / "a"), tmp_path / "b")
    for name in ("articles.jsonl", "sources.jsonl", "snippets.jsonl", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_changed_files_are_detected(tmp_path: Path) -> None:
    ds = import_records([record()], "mem.json").dataset
    save_dataset(ds, tmp_path)
    path = tmp_path / "sources.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace("слово", "слова", 1), encoding="utf-8")
    with pytest.raises(DatasetStoreError, match="does not match"):
        load_dataset(tmp_path)
    assert load_dataset(tmp_path, verify=False).sources[0].text.startswith("слова")


def test_files_as_written_take_the_dataset_id_from_the_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The id is recomputed (every item dumped to canonical JSON) only when a file is not byte for byte the one
    written: here an added blank line, which changes no item, so the recomputed id matches."""
    ds = import_records([record()], "mem.json").dataset
    save_dataset(ds, tmp_path)
    import ruwikibench.dataset

    dumps = []
    real = ruwikibench.dataset.json.dumps
    monkeypatch.setattr(ruwikibench.dataset.json, "dumps", lambda *a, **k: dumps.append(1) or real(*a, **k))
    assert load_dataset(tmp_path).dataset_id == ds.dataset_id and not dumps
    path = tmp_path / "snippets.jsonl"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert load_dataset(tmp_path).dataset_id == ds.dataset_id and dumps


def test_unreadable_directories_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetStoreError, match=r"manifest\.json: no manifest"):
        load_dataset(tmp_path)
    save_dataset(import_records([record()], "mem.json").dataset, tmp_path)
    (tmp_path / "snippets.jsonl").write_text('{"id": 1}\n', encoding="utf-8")
    with pytest.raises(DatasetStoreError, match=r"snippets\.jsonl:1: "):
        load_dataset(tmp_path)
    (tmp_path / "manifest.json").write_text("{", encoding="utf-8")
    with pytest.raises(DatasetStoreError, match="invalid JSON"):
        load_dataset(tmp_path)


def test_lines_read_as_bytes_give_what_lines_read_as_text_gave(tmp_path: Path) -> None:
    """The lines are validated as bytes; whatever that rejects is read as text, line by line, as before: a line
    blank only as text (a no-break space) is skipped, \\r\\n and \\r end lines, a bad line is named, bytes that are
    not UTF-8 are a UnicodeDecodeError."""
    ds = import_records([record("Один"), record("Два")], "mem.json").dataset
    save_dataset(ds, tmp_path)
    path = tmp_path / "snippets.jsonl"
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\r\n".join(lines[:2]) + b"\r" + lines[2] + "\n\u00a0\u2007\n".encode() + b"\n".join(lines[3:]))
    assert load_dataset(tmp_path).snippets == ds.snippets
    path.write_bytes(b"\n".join([*lines[:3], b"{", *lines[3:]]))
    with pytest.raises(DatasetStoreError, match=r"snippets\.jsonl:4: line: Invalid JSON"):
        load_dataset(tmp_path)
    path.write_bytes(b"\n".join([*lines[:3], lines[3][:-2] + b"\xff" + lines[3][-2:], *lines[4:]]))
    with pytest.raises(UnicodeDecodeError):
        load_dataset(tmp_path)


def test_real_sample_round_trip(imported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    save_dataset(imported.dataset, tmp_path)
    loaded = load_dataset(tmp_path)
    assert loaded == imported.dataset
    assert loaded.dataset_id == imported.dataset.dataset_id
