"""The one JSONL writer/reader: torn last lines, repair before appending, bad lines named, latest per key."""

from pathlib import Path

import pytest

from ruwikibench.storage.jsonl import (
    JsonlAppender,
    JsonlError,
    append_jsonl,
    latest,
    read_jsonl,
    read_records,
    rewrite_jsonl,
)


def test_torn_last_line_is_skipped_and_cut_before_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3, "b"')  # killed while writing the third record
    assert list(read_records(path)) == [{"a": 1}, {"a": 2}]
    append_jsonl(path, [{"a": 4}])
    assert path.read_bytes() == b'{"a": 1}\n{"a": 2}\n{"a": 4}\n'  # never glued onto the torn line


def test_complete_last_record_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes('{"a": "ё"}'.encode())  # the newline was the part that did not reach the disk
    assert list(read_records(path)) == [{"a": "ё"}]
    with JsonlAppender(path) as out:
        out.write({"a": 2})
        out.write_many([{"a": 3}, {"a": 4}])
    assert [r["a"] for r in read_records(path)] == ["ё", 2, 3, 4]


def test_torn_multibyte_character_on_the_last_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n' + '{"t": "Кош'.encode()[:-1])
    assert list(read_records(path)) == [{"a": 1}]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"a": 1}\n{"a": \n{"a": 3}\n', "x.jsonl:2: invalid JSON"),
        (b'{"a": 1}\n[1, 2]\n', "x.jsonl:2: expected a JSON object, got list"),
        (b'\xff\xfe\n{"a": 1}\n', "x.jsonl:1: not UTF-8 text"),
    ],
)
def test_a_bad_line_before_the_end_names_file_and_line(tmp_path: Path, body: bytes, message: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(body)
    with pytest.raises(JsonlError, match=message):
        list(read_jsonl(path))


def test_line_numbers_count_blank_lines_and_missing_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n', encoding="utf-8")
    assert [n for n, _ in read_jsonl(path)] == [1, 3]
    assert list(read_jsonl(tmp_path / "absent.jsonl")) == []


def test_rewrite_replaces_and_latest_keeps_the_last_record_per_key(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    append_jsonl(path, [{"a": 0}])
    rows = [
        {"stage": "s", "article": "A", "item": "1", "v": 1},
        {"stage": "s", "article": "B", "item": "1", "v": 2},
        {"stage": "s", "article": "A", "item": "1", "v": 3},
    ]
    rewrite_jsonl(path, rows)
    assert list(read_records(path)) == rows and not (tmp_path / "x.jsonl.tmp").exists()
    assert [r["v"] for r in latest(read_records(path))] == [3, 2]


def test_unit_keys_read_from_the_line_start_or_the_whole_record(tmp_path: Path) -> None:
    from ruwikibench.storage.jsonl import read_unit_keys

    path = tmp_path / "outputs.jsonl"
    append_jsonl(
        path,
        [
            {"stage": "s", "article": 'A "quoted" \\ name', "unit": "u1", "output": {"x": 1}},
            {"article": "B", "stage": "s", "unit": "u2"},  # another key order: parsed whole
            {"stage": "s", "article": "C", "unit": 3},
        ],
    )  # a number, not a string: parsed whole
    with open(path, "ab") as handle:
        handle.write(b'{"stage": "s", "article": "D", "unit": "u4", "output": {"x"')  # torn: skipped
    assert list(read_unit_keys(path)) == [
        (1, ("s", 'A "quoted" \\ name', "u1")),
        (2, ("s", "B", "u2")),
        (3, ("s", "C", "3")),
    ]
    assert [n for n, _ in read_jsonl(path, {2, 3})] == [2, 3]


def test_run_outputs_stream_the_latest_of_each_unit(tmp_path: Path) -> None:
    from ruwikibench.storage.rundir import RunDir

    rundir = RunDir(tmp_path)
    rows = [
        {"stage": "article", "article": "A", "unit": "article", "output": 1},  # a stage's earlier name
        {"stage": "sections", "article": "A", "unit": "s1", "output": 2},
        {"stage": "writer", "article": "A", "unit": "article", "output": 3},
        {"stage": "sections", "article": "B", "unit": "s1", "output": 4},
    ]
    rundir.append_many("outputs.jsonl", rows)
    assert list(rundir.iter_outputs()) == [rows[1], rows[2], rows[3]]
    assert sorted(rundir.iter_outputs(), key=lambda r: r["output"]) == sorted(
        rundir.outputs(), key=lambda r: r["output"]
    )
    assert rundir.output_keys() == {
        ("writer", "A", "article"),
        ("sections", "A", "s1"),
        ("sections", "B", "s1"),
    }
