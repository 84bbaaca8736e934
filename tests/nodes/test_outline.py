"""Outline node helpers: clustering (deterministic, three centroid modes), selection with neighbours,
prompts."""

from __future__ import annotations

import numpy as np
import pytest

from ruwikibench.conf.builtin_options import OutlineConfig
from ruwikibench.nodes.outline import (
    Cluster,
    ClusterResult,
    OutlineInput,
    OutlineSnippet,
    choose_k,
    cluster_snippets,
    render_mini_outlines,
    render_texts,
    select_context,
)
from ruwikibench.nodes.outline_parser import Heading
from ruwikibench.prompts import PromptLibrary


def blobs(centers: np.ndarray, per: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    points = np.concatenate([c + noise * rng.normal(size=(per, centers.shape[1])) for c in centers])
    return points / np.linalg.norm(points, axis=1, keepdims=True)


CENTERS = np.eye(8)[:3] * 1.0


def make_input(
    n: int, headings: list[str] | None = None, firsts: list[str | None] | None = None
) -> OutlineInput:
    snippets = [
        OutlineSnippet(id=f"src{i % 4}#{i // 4}", source_id=f"src{i % 4}", index=i // 4, text=f"t{i}")
        for i in range(n)
    ]
    return OutlineInput(title="T", snippets=snippets, headings=headings, first_snippets=firsts)


def heading_embedder(vectors: np.ndarray):  # type: ignore[no-untyped-def]
    return lambda headings: vectors[: len(headings)]


def test_heading_centroids_recover_the_blobs_in_heading_order() -> None:
    vectors = blobs(CENTERS, per=5, noise=0.1, seed=0)
    data = make_input(15, headings=["c", "a", "b"])
    heading_vectors = CENTERS[[2, 0, 1]]
    clusters, method, notes = cluster_snippets(
        data, vectors, OutlineConfig(), heading_embedder(heading_vectors)
    )
    assert method == "headings" and notes == []
    assert [c.label for c in clusters] == ["c", "a", "b"]
    ids = [s.id for s in data.snippets]
    assert set(clusters[0].members) == set(
        ids[10:15]
    )  # blob 2 belongs to the heading initialized at centre 2
    assert set(clusters[1].members) == set(ids[0:5])
    assert all(c.distances == sorted(c.distances) for c in clusters)


def test_clustering_is_deterministic_for_a_fixed_seed() -> None:
    vectors = blobs(np.eye(8)[:4], per=6, noise=0.6, seed=1)  # overlapping blobs: the seed matters
    data = make_input(24)
    config = OutlineConfig(centroids="data", seed=7)
    first = cluster_snippets(data, vectors, config, heading_embedder(vectors))
    second = cluster_snippets(data, vectors, config, heading_embedder(vectors))
    assert first == second
    with_heads = make_input(24, headings=["a", "b", "c"])
    init = np.eye(8)[:3]
    one = cluster_snippets(with_heads, vectors, OutlineConfig(), heading_embedder(init))
    two = cluster_snippets(with_heads, vectors, OutlineConfig(), heading_embedder(init))
    assert one == two


def test_choose_k_finds_separated_blobs_and_is_bounded() -> None:
    for true_k in (2, 3, 5):
        vectors = blobs(np.eye(8)[:true_k], per=6, noise=0.05, seed=true_k)
        assert choose_k(vectors, 2, 8, seed=42) == true_k
    vectors = blobs(np.eye(8)[:5], per=6, noise=0.05, seed=5)
    assert choose_k(vectors, 2, 3, seed=42) <= 3
    assert choose_k(vectors[:2], 2, 8, seed=42) == 2
    assert choose_k(vectors[:1], 2, 8, seed=42) == 1


def test_no_headings_falls_back_to_data_mode() -> None:
    vectors = blobs(CENTERS, per=5, noise=0.05, seed=2)
    clusters, method, notes = cluster_snippets(
        make_input(15), vectors, OutlineConfig(), heading_embedder(CENTERS)
    )
    assert method == "data" and len(clusters) == 3 and notes == ["no reference headings: k chosen from data"]
    assert all(c.init == "data" and c.label is None for c in clusters)


def test_first_snippet_centroids_use_snippet_vectors_with_heading_fallback() -> None:
    vectors = blobs(CENTERS, per=5, noise=0.1, seed=3)
    data = make_input(15, headings=["x", "y", "z"], firsts=[data_id(12), None, data_id(0)])
    wrong = np.eye(8)[[5, 1, 6]]  # heading vectors point elsewhere except y
    clusters, method, notes = cluster_snippets(
        data, vectors, OutlineConfig(centroids="first_snippet"), heading_embedder(wrong)
    )
    assert method == "first_snippet"
    assert [c.init for c in clusters] == ["first_snippet", "heading", "first_snippet"]
    assert data_id(12) in clusters[0].members and data_id(0) in clusters[2].members
    assert len(notes) == 1 and "'y'" in notes[0]


def data_id(i: int) -> str:
    return f"src{i % 4}#{i // 4}"


def test_more_headings_than_snippets_is_clamped_and_noted() -> None:
    vectors = blobs(CENTERS[:2], per=1, noise=0.01, seed=4)
    clusters, _, notes = cluster_snippets(
        make_input(2, headings=["a", "b", "c"]), vectors, OutlineConfig(), heading_embedder(np.eye(8)[:3])
    )
    assert len(clusters) == 2 and "3 headings but 2 snippets" in notes[0]
    assert cluster_snippets(make_input(0, headings=["a"]), np.zeros((0, 8)), OutlineConfig(), None)[0] == []


def test_select_context_adds_same_source_neighbours() -> None:
    snippets = [
        OutlineSnippet(id=f"{s}#{i}", source_id=s, index=i, text=f"{s}{i}") for s in "ab" for i in range(4)
    ]
    cluster = Cluster(index=0, init="heading", members=["a#2", "b#0", "a#3"], distances=[0.1, 0.2, 0.3])
    assert select_context(cluster, snippets, per_cluster=2, neighbors=0) == (["a#2", "b#0"], ["a#2", "b#0"])
    selected, context = select_context(cluster, snippets, per_cluster=2, neighbors=1)
    assert selected == ["a#2", "b#0"]
    assert context == ["a#1", "a#2", "a#3", "b#0", "b#1"]  # b#-1 does not exist


def test_render_texts_respects_both_caps() -> None:
    snippets = [
        OutlineSnippet(id=f"s#{i}", source_id="s", index=i, text=("слово " * 400).strip()) for i in range(4)
    ]
    text = render_texts([s.id for s in snippets], snippets, snippet_chars=500, cluster_chars=1200)
    parts = text.split("\n\n")
    assert len(parts) == 4 and all(p.startswith(f"[{i}] ") for i, p in enumerate(parts, 1))
    assert all(len(p) <= 300 + 8 for p in parts)  # 1200 / 4 characters each, plus the marker and ellipsis
    single = render_texts(["s#0"], snippets, snippet_chars=500, cluster_chars=6000)
    assert len(single) <= 500 + 8


def test_render_mini_outlines_uses_parsed_headings_in_cluster_order() -> None:
    results = [
        ClusterResult(
            index=1, selected=[], context=[], mini_text="x", mini_outline=[Heading(level=2, title="Б")]
        ),
        ClusterResult(index=0, selected=[], context=[], mini_text="Извините", mini_outline=[]),
    ]
    assert render_mini_outlines(results, PromptLibrary()) == "План части 1:\nИзвините\n\nПлан части 2:\n## Б"


@pytest.mark.parametrize("mode,expected", [("direct", 0), ("neighbors", 1), ("description", 0)])
def test_neighbour_count_follows_mode(mode: str, expected: int) -> None:
    assert OutlineConfig(mode=mode).neighbor_count() == expected  # type: ignore[arg-type]
    assert OutlineConfig(mode=mode, neighbors=2).neighbor_count() == 2  # type: ignore[arg-type]
