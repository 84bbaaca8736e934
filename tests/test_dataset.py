from ruwikibench.dataset import Article, Dataset, Paragraph, Section, Snippet, Source, safe_name


def _article() -> Article:
    a = Section(id="s1", level=2, title="История", paragraphs=[Paragraph(text="x", citations=["c1"])])
    b = Section(id="s2", level=2, title="История", paragraphs=[Paragraph(text="y", citations=["c2"])])
    root = Section(id="s0", level=1, title="Тест", children=[a, b])
    return Article(title="Тест: статья", name=safe_name("Тест: статья"), root=root)


def test_safe_name_removes_forbidden_characters() -> None:
    assert safe_name('A: B/C?"*') == "A BC"


def test_duplicate_headings_stay_apart() -> None:
    article = _article()
    assert [s.id for s in article.sections()] == ["s0", "s1", "s2"]
    assert article.section("s2").paragraphs[0].text == "y"


def test_dataset_lookups_and_id_change_with_content() -> None:
    article = _article()
    sources = [
        Source(id="Тест статья/source_1", article=article.name, footnote_id="c1", text="t1"),
        Source(id="Тест статья/source_2", article=article.name, footnote_id="c2", text="t2"),
    ]
    snippets = [
        Snippet(
            id=f"{s.id}#0",
            article=article.name,
            source_id=s.id,
            index=0,
            text=s.text,
            word_start=0,
            word_end=1,
        )
        for s in sources
    ]
    ds = Dataset(articles=[article], sources=sources, snippets=snippets)
    assert ds.article("Тест: статья") is article
    assert [s.id for s in ds.section_snippets(article, article.section("s2"))] == ["Тест статья/source_2#0"]
    other = Dataset(articles=[article], sources=sources, snippets=snippets[:1])
    assert ds.dataset_id != other.dataset_id


def test_grouped_lookups_equal_scans_of_the_whole_dataset() -> None:
    articles = ["А", "Б", "В"]
    sources = [
        Source(id=f"{a}/source_{i}", article=a, footnote_id=f"c{i}", text="t")
        for i in range(3)
        for a in articles
    ]
    snippets = [
        Snippet(
            id=f"{s.id}#{k}",
            article=s.article,
            source_id=s.id,
            index=k,
            text="t",
            word_start=k,
            word_end=k + 1,
        )
        for k in range(2)
        for s in reversed(sources)
    ]
    ds = Dataset(articles=[], sources=sources, snippets=snippets)
    for name in [*articles, "нет такой"]:
        assert ds.sources_of(name) == [s for s in sources if s.article == name]
        assert ds.snippets_of(name) == [s for s in snippets if s.article == name]
    for source in sources:
        assert ds.snippets_of_source(source.id) == [s for s in snippets if s.source_id == source.id]
    ds.snippets_of("А").clear()  # a caller's list is its own
    assert len(ds.snippets_of("А")) == 6
