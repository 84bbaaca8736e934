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


def test_files_as_written_take_the_dataset_id_from_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The id is recomputed (every item dumped to canonical JSON) only when a file is not byte for byte the
    one written: here an added blank line, which changes no item, so the recomputed id matches."""
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
    """The lines are validated as bytes; whatever that rejects is read as text, line by line, as before: a
    line blank only as text (a no-break space) is skipped, \\r\\n and \\r end lines, a bad line is named,
    bytes that are not UTF-8 are a UnicodeDecodeError."""
    ds = import_records([record("Один"), record("Два")], "mem.json").dataset
    save_dataset(ds, tmp_path)
    path = tmp_path / "snippets.jsonl"
    lines = path.read_bytes().splitlines()
    path.write_bytes(
        b"\r\n".join(lines[:2]) + b"\r" + lines[2] + "\n\u00a0\u2007\n".encode() + b"\n".join(lines[3:])
    )
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


def test_files_are_read_a_line_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader never holds a file whole beside its items (no read_bytes / read_text), and still gives the
    same dataset and the manifest's id: the sha256 of the lines read equals the file's."""
    ds = import_records([record("Один"), record("Два")], "mem.json").dataset
    save_dataset(ds, tmp_path)

    real = {"read_bytes": Path.read_bytes, "read_text": Path.read_text}

    def whole(how: str):  # type: ignore[no-untyped-def]
        def read(path: Path, *args: object, **kwargs: object) -> object:
            assert path.suffix != ".jsonl", f"{path.name} was read whole"
            return real[how](path, *args, **kwargs)  # type: ignore[operator]

        return read

    for how in real:
        monkeypatch.setattr(Path, how, whole(how))
    loaded = load_dataset(tmp_path)
    assert loaded == ds and loaded.dataset_id == ds.dataset_id
    assert [s.text for s in loaded.snippets] == [s.text for s in ds.snippets]


def test_windows_line_ends_and_a_bad_line_number(tmp_path: Path) -> None:
    """CRLF files (copied through Windows) load the same items, their id recomputed (the bytes differ from the
    manifest's); a bad line is named by its number, blank lines counted."""
    ds = import_records([record()], "mem.json").dataset
    save_dataset(ds, tmp_path)
    for name in ("articles.jsonl", "sources.jsonl", "snippets.jsonl"):
        path = tmp_path / name
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert load_dataset(tmp_path) == ds
    path = tmp_path / "snippets.jsonl"
    path.write_bytes(path.read_bytes().replace(b"\r\n", b"\r\n\r\n{}\r\n", 1))
    with pytest.raises(DatasetStoreError, match=r"snippets\.jsonl:3: "):
        load_dataset(tmp_path)


def test_source_texts_left_on_disk_read_the_same(tmp_path: Path) -> None:
    """A dataset loaded for a run leaves the sources' texts on disk: none in memory, each read from its line
    when asked for; dumps, the id, equality and a saved copy are those of the dataset loaded whole."""
    ds = import_records([record("Один"), record("Два")], "mem.json").dataset
    save_dataset(ds, tmp_path / "d")
    full = load_dataset(tmp_path / "d")
    lazy = load_dataset(tmp_path / "d", source_texts=False)
    assert all("text" not in s.__dict__ for s in lazy.sources)
    assert [s.text for s in lazy.sources] == [s.text for s in full.sources]
    assert all("text" not in s.__dict__ for s in lazy.sources)  # read, not kept
    assert lazy.dataset_id == full.dataset_id
    assert lazy.sources[1].model_dump() == full.sources[1].model_dump()
    assert lazy.sources[2].model_dump_json() == full.sources[2].model_dump_json()  # same keys, same order
    assert lazy.sources[3].model_copy(update={"id": "x"}).text == full.sources[3].text
    save_dataset(load_dataset(tmp_path / "d", source_texts=False), tmp_path / "e")
    for name in ("articles.jsonl", "sources.jsonl", "snippets.jsonl", "manifest.json"):
        assert (tmp_path / "d" / name).read_bytes() == (tmp_path / "e" / name).read_bytes()
    assert load_dataset(tmp_path / "d", source_texts=False) == full
    assert load_dataset(tmp_path / "d", source_texts=False).model_dump() == full.model_dump()


def test_snippet_texts_left_on_disk_read_the_same(tmp_path: Path) -> None:
    """The scoring process's load: the snippets' texts on disk too, each read from its line; the same
    dataset."""
    ds = import_records([record("Один"), record("Два")], "mem.json").dataset
    save_dataset(ds, tmp_path / "d")
    full = load_dataset(tmp_path / "d")
    lazy = load_dataset(tmp_path / "d", source_texts=False, snippet_texts=False)
    assert lazy.snippets and all("text" not in s.__dict__ for s in lazy.snippets)
    assert [s.text for s in lazy.snippets] == [s.text for s in full.snippets]
    assert all("text" not in s.__dict__ for s in lazy.snippets)  # read, not kept
    assert lazy.dataset_id == full.dataset_id
    assert lazy.snippet(full.snippets[1].id).text == full.snippets[1].text
    assert lazy.snippets[0].model_dump_json() == full.snippets[0].model_dump_json()
    assert load_dataset(tmp_path / "d", snippet_texts=False) == full
    path = tmp_path / "d" / "snippets.jsonl"
    path.write_text("\n" + path.read_text(encoding="utf-8"), encoding="utf-8")  # every line moved by one byte
    with pytest.raises(ValueError, match="changed since the dataset was loaded"):
        _ = lazy.snippets[1].text


def test_a_source_text_whose_file_changed_is_an_error(tmp_path: Path) -> None:
    ds = import_records([record()], "mem.json").dataset
    save_dataset(ds, tmp_path)
    lazy = load_dataset(tmp_path, source_texts=False)
    path = tmp_path / "sources.jsonl"
    path.write_text("\n" + path.read_text(encoding="utf-8"), encoding="utf-8")  # every line moved by one byte
    with pytest.raises(ValueError, match="changed since the dataset was loaded"):
        _ = lazy.sources[1].text


def test_a_run_loads_the_dataset_without_source_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ruwikibench.api import load_inputs

    monkeypatch.setenv("RUWIKIBENCH_MODEL", "m")
    save_dataset(import_records([record()], "mem.json").dataset, tmp_path / "d")
    _, data, _ = load_inputs(Path(__file__).resolve().parents[2] / "configs" / "paper.yaml", tmp_path / "d")
    assert data.sources and all("text" not in s.__dict__ for s in data.sources)
    assert data.sources[0].text


def test_source_texts_left_on_disk_from_windows_and_cr_lines(tmp_path: Path) -> None:
    """CRLF lines are left on disk as well (the text read back from its line); lines that only text reading
    splits (a lone \\r between two records) keep their texts in memory: both give the texts of the dataset."""
    ds = import_records([record("Один"), record("Два")], "mem.json").dataset
    save_dataset(ds, tmp_path)
    path = tmp_path / "sources.jsonl"
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\r\n".join(lines[:3]) + b"\r" + b"\n".join(lines[3:]) + b"\n")
    lazy = load_dataset(
        tmp_path, source_texts=False, verify=False
    )  # (verified, the id is recomputed: texts loaded)
    assert [s.text for s in lazy.sources] == [s.text for s in ds.sources]
    assert "text" not in lazy.sources[0].__dict__ and "text" in lazy.sources[3].__dict__
    assert load_dataset(tmp_path, source_texts=False) == ds
