"""Short prompt pieces live in files too, and a prompts_dir replaces them like any prompt."""

from pathlib import Path

from ruwikibench.prompts import PromptLibrary


def test_fragments_come_from_files_and_prompts_dir_overrides_them(tmp_path: Path) -> None:
    shipped = PromptLibrary()
    assert shipped.fragment("empty_answer") == "(пустой ответ)"
    assert shipped.fragment("more_sources", count=3) == "[… ещё источников: 3]"
    assert shipped.fragment("outline_part", number=2, outline="## Б") == "План части 2:\n## Б"
    assert shipped.fragment("no_sections") == "- (разделов нет)"
    (tmp_path / "ru").mkdir()
    (tmp_path / "ru" / "fragment_empty_answer.txt").write_text("(no answer)", encoding="utf-8")
    assert PromptLibrary(tmp_path).fragment("empty_answer") == "(no answer)"
    library = PromptLibrary(tmp_path)
    library.fragment("empty_answer")
    assert "ru/fragment_empty_answer.txt" in library.hashes()  # recorded in the run log like any prompt
