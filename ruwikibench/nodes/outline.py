"""Stage 2 nodes: cluster the article's snippets, write a mini-outline per cluster, merge, parse.

Flow (see :mod:`ruwikibench.graphs.outline`)::

    cluster --Send per cluster--> select --> [describe] --> mini_outline --> merge --> parse

``cluster`` embeds the snippets as passages and runs KMeans. Centroids (``OutlineConfig.centroids``):
``headings`` (paper: k = number of reference H2 headings, centroids initialized from the headings'
embeddings), ``first_snippet`` (authors' code: each centroid is the embedding of the first snippet of the
first kept source the H2 block cites) or ``data`` (writer mode, no gold: k chosen by silhouette, see
:func:`choose_k`). Without reference headings the node falls back to ``data``.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Annotated, Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Send
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from ruwikibench.conf.builtin_options import OutlineConfig
from ruwikibench.nodes.answers import ask
from ruwikibench.nodes.outline_parser import Heading, parse_outline, to_markdown
from ruwikibench.prompts import PromptLibrary
from ruwikibench.prompts.render import numbered_texts
from ruwikibench.runtime.executors import embed_async, run_cpu
from ruwikibench.stage.context import StageContext

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np

ROLE = "outline"


class OutlineSnippet(BaseModel):
    id: str
    source_id: str
    index: int = Field(description="chunk index within its source (neighbours are index ± n)")
    text: str


class OutlineInput(BaseModel):
    """Stage input: from gold data (benchmark) or from the ranking stage (writer, no headings)."""

    title: str
    snippets: list[OutlineSnippet]
    headings: list[str] | None = Field(
        default=None, description="reference H2 headings; absent in writer mode"
    )
    first_snippets: list[str | None] | None = Field(
        default=None,
        description="per reference H2 heading, the id of its first cited snippet (authors' variant)",
    )


class Cluster(BaseModel):
    index: int
    label: str | None = Field(default=None, description="the heading its centroid started from, if any")
    init: Literal["heading", "first_snippet", "data"]
    members: list[str] = Field(description="snippet ids, nearest to the final centroid first")
    distances: list[float]


class ClusterResult(BaseModel):
    index: int
    label: str | None = None
    selected: list[str] = Field(description="the per_cluster members nearest the centroid")
    context: list[str] = Field(
        description="selected plus neighbours: the snippets whose text went into the prompt"
    )
    description: str | None = None
    mini_text: str = Field(description="the model's raw mini-outline")
    mini_outline: list[Heading]


class OutlineOutput(BaseModel):
    """Stage output: the outline and every intermediate."""

    k: int = 0
    k_method: str = ""
    clusters: list[Cluster] = Field(default_factory=list)
    cluster_results: list[ClusterResult] = Field(default_factory=list)
    merged_text: str = ""
    outline: list[Heading] = Field(default_factory=list)
    outline_markdown: str = ""
    dropped: list[str] = Field(
        default_factory=list, description="lines of the merged answer that were not headings"
    )
    ended: bool = False
    notes: list[str] = Field(default_factory=list, description="fallbacks and clamps taken, for the run log")


class OutlineState(TypedDict, total=False):
    title: str
    snippets: list[OutlineSnippet]
    headings: list[str] | None
    first_snippets: list[str | None] | None
    k: int
    k_method: str
    clusters: list[Cluster]
    cluster_results: Annotated[list[ClusterResult], operator.add]
    merged_text: str
    outline: list[Heading]
    outline_markdown: str
    dropped: list[str]
    ended: bool
    notes: Annotated[list[str], operator.add]


class ClusterTask(TypedDict, total=False):
    """The private state of one cluster's branch (Send payload)."""

    title: str
    cluster: Cluster
    snippets: list[OutlineSnippet]
    selected: list[str]
    context: list[str]
    texts: str
    description: str | None


# ---------------------------------------------------------------- clustering helpers


def choose_k(vectors: np.ndarray, k_min: int, k_max: int, seed: int) -> int:
    """Writer mode: the k in [k_min, min(k_max, n − 1)] with the best cosine silhouette (ties: smaller k).

    Fewer than three snippets give k = n (nothing to compare). Each k is fitted with k-means++ (n_init=1,
    ``seed``), so the choice is deterministic; the cost is at most ``k_max − k_min + 1`` small fits.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    n = len(vectors)
    if n < 3:
        return n
    best_k, best = min(k_min, n - 1), -2.0
    for k in range(max(2, k_min), min(k_max, n - 1) + 1):
        labels = KMeans(n_clusters=k, n_init=1, random_state=seed).fit_predict(vectors)
        if len(set(labels)) < 2:
            continue
        score = float(silhouette_score(vectors, labels, metric="cosine"))
        if score > best + 1e-9:
            best_k, best = k, score
    return best_k


def initial_centroids(
    state: OutlineInput, vectors: np.ndarray, config: OutlineConfig, embed_headings: Any
) -> tuple[np.ndarray | None, list[str | None], list[str], list[str]]:
    """Initial centroids, their labels, their kind ('heading'/'first_snippet') and notes; None = data mode."""
    import numpy as np

    headings = [h for h in (state.headings or []) if h.strip()]
    if config.centroids == "data" or not headings:
        return (
            None,
            [],
            [],
            ([] if config.centroids == "data" else ["no reference headings: k chosen from data"]),
        )
    heading_vectors = embed_headings(headings)
    if config.centroids == "headings":
        return heading_vectors, list(headings), ["heading"] * len(headings), []
    position = {s.id: i for i, s in enumerate(state.snippets)}
    firsts = list(state.first_snippets or [])
    rows, kinds, notes = [], [], []
    for i, heading in enumerate(headings):
        snip = firsts[i] if i < len(firsts) else None
        if snip is not None and snip in position:
            rows.append(vectors[position[snip]])
            kinds.append("first_snippet")
        else:
            rows.append(heading_vectors[i])
            kinds.append("heading")
            notes.append(f"heading {heading!r}: no first cited snippet, centroid from the heading")
    return np.stack(rows), list(headings), kinds, notes


def run_kmeans(
    vectors: np.ndarray, k: int, init: np.ndarray | None, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """KMeans labels and centroids; ``init`` given -> n_init=1 from those centroids, else k-means++."""
    import numpy as np
    from sklearn.cluster import KMeans

    if init is not None:
        model = KMeans(n_clusters=k, init=init.astype(np.float64), n_init=1, random_state=seed)
    else:
        model = KMeans(n_clusters=k, n_init=1, random_state=seed)
    labels = model.fit_predict(vectors.astype(np.float64))
    return labels, model.cluster_centers_


def cluster_snippets(
    state: OutlineInput, vectors: np.ndarray, config: OutlineConfig, embed_headings: Any
) -> tuple[list[Cluster], str, list[str]]:
    """Group snippets into clusters; returns clusters (members nearest first), the k method and notes."""
    import numpy as np

    n = len(state.snippets)
    if n == 0:
        return [], "none", ["no snippets"]
    init, labels_text, kinds, notes = initial_centroids(state, vectors, config, embed_headings)
    if init is None:
        k, method = choose_k(vectors, config.data_k_min, config.data_k_max, config.seed), "data"
        kinds = ["data"] * k
        labels_text = [None] * k
    else:
        k, method = len(init), config.centroids
        if k > n:
            notes.append(f"{k} headings but {n} snippets: first {n} headings used as centroids")
            init, labels_text, kinds, k = init[:n], labels_text[:n], kinds[:n], n
    if k <= 1:
        labels, centers = np.zeros(n, dtype=int), vectors.mean(axis=0, keepdims=True)
    else:
        labels, centers = run_kmeans(vectors, k, init, config.seed)
    clusters = []
    for c in range(len(centers)):
        idx = np.flatnonzero(labels == c)
        if len(idx) == 0:
            notes.append(f"cluster {c} ({labels_text[c]!r}) is empty")
            continue
        dist = np.linalg.norm(vectors[idx] - centers[c], axis=1)
        order = np.argsort(dist, kind="stable")
        clusters.append(
            Cluster(
                index=c,
                label=labels_text[c],
                init=kinds[c],  # type: ignore[arg-type]
                members=[state.snippets[i].id for i in idx[order]],
                distances=[round(float(d), 6) for d in dist[order]],
            )
        )
    return clusters, method, notes


def select_context(
    cluster: Cluster, snippets: list[OutlineSnippet], per_cluster: int, neighbors: int
) -> tuple[list[str], list[str]]:
    """The ``per_cluster`` members nearest the centroid, then each widened by ``neighbors`` chunks of its
    source."""
    selected = cluster.members[:per_cluster]
    by_pos = {(s.source_id, s.index): s.id for s in snippets}
    by_id = {s.id: s for s in snippets}
    context: list[str] = []
    for sid in selected:
        snip = by_id[sid]
        for j in range(snip.index - neighbors, snip.index + neighbors + 1):
            other = by_pos.get((snip.source_id, j))
            if other is not None and other not in context:
                context.append(other)
    return selected, context


def render_texts(
    ids: list[str], snippets: list[OutlineSnippet], snippet_chars: int, cluster_chars: int
) -> str:
    """Snippet texts for a prompt, each cut to min(snippet_chars, cluster_chars / count) characters."""
    by_id = {s.id: s for s in snippets}
    cap = max(100, min(snippet_chars, cluster_chars // max(1, len(ids))))
    return numbered_texts([by_id[sid].text for sid in ids], cap, keep=0)


def render_mini_outlines(results: list[ClusterResult], prompts: PromptLibrary) -> str:
    """Mini-outlines for the merge prompt, re-rendered from the parsed headings (model chatter left out)."""
    blocks = []
    for number, result in enumerate(sorted(results, key=lambda r: r.index), 1):
        body = to_markdown(result.mini_outline) if result.mini_outline else result.mini_text.strip()
        blocks.append(prompts.fragment("outline_part", number=number, outline=body))
    return "\n\n".join(blocks)


# ---------------------------------------------------------------- LLM helpers


# ---------------------------------------------------------------- nodes


async def cluster(state: OutlineState, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """Embed the snippets as passages and cluster them (embedding on the model lane, KMeans on the CPU
    pool)."""
    context = runtime.context
    data = OutlineInput.model_validate(
        {key: state.get(key) for key in ("title", "snippets", "headings", "first_snippets")}
    )
    vectors = await embed_async(context.embedder, [s.text for s in data.snippets], "passage")
    headings = (
        [h for h in (data.headings or []) if h.strip()]
        if context.config.options(OutlineConfig).centroids != "data"
        else []
    )
    heading_vectors = await embed_async(context.embedder, headings, "query") if headings else None

    def embed_headings(wanted: list[str]) -> np.ndarray:
        assert heading_vectors is not None and wanted == headings
        return heading_vectors

    clusters, method, notes = await run_cpu(
        cluster_snippets, data, vectors, context.config.options(OutlineConfig), embed_headings
    )
    return {"clusters": clusters, "k": len(clusters), "k_method": method, "notes": notes}


def fan_out(state: OutlineState) -> list[Send] | str:
    """One ``select`` task per cluster; straight to ``merge`` when there is nothing to cluster."""
    if not state.get("clusters"):
        return "merge"
    return [
        Send("select", {"title": state["title"], "cluster": c, "snippets": state["snippets"]})
        for c in state["clusters"]
    ]


async def select(
    state: ClusterTask, runtime: Runtime[StageContext]
) -> Command[Literal["describe", "mini_outline"]]:
    """Pick the snippets nearest the centroid (plus neighbours) and render their texts."""
    config = runtime.context.config.options(OutlineConfig)
    snippets = [OutlineSnippet.model_validate(s) for s in state["snippets"]]
    cluster_ = Cluster.model_validate(state["cluster"])
    selected, ids = select_context(cluster_, snippets, config.per_cluster, config.neighbor_count())
    task: ClusterTask = {
        "title": state["title"],
        "cluster": cluster_,
        "selected": selected,
        "context": ids,
        "texts": render_texts(ids, snippets, config.snippet_chars, config.cluster_chars),
        "description": None,
    }
    return Command(goto=Send("describe" if config.mode == "description" else "mini_outline", task))


async def describe(state: ClusterTask, runtime: Runtime[StageContext]) -> Command[Literal["mini_outline"]]:
    """Description mode: a 2–5 sentence description of the cluster's texts."""
    config = runtime.context.config.options(OutlineConfig)
    description = await ask(
        runtime.context,
        ROLE,
        config.prompt_describe,
        max_tokens=config.describe_max_tokens,
        title=state["title"],
        texts=state["texts"],
    )
    return Command(goto=Send("mini_outline", {**state, "description": description}))


async def mini_outline(state: ClusterTask, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """A mini-outline (2–5 headings) from the texts (direct) or from the description."""
    config = runtime.context.config.options(OutlineConfig)
    if state.get("description") is not None:
        text = await ask(
            runtime.context,
            ROLE,
            config.prompt_mini_outline_description,
            max_tokens=config.mini_max_tokens,
            title=state["title"],
            description=state["description"],
        )
    else:
        text = await ask(
            runtime.context,
            ROLE,
            config.prompt_mini_outline_direct,
            max_tokens=config.mini_max_tokens,
            title=state["title"],
            texts=state["texts"],
        )
    cluster_ = Cluster.model_validate(state["cluster"])
    result = ClusterResult(
        index=cluster_.index,
        label=cluster_.label,
        selected=state["selected"],
        context=state["context"],
        description=state.get("description"),
        mini_text=text,
        mini_outline=parse_outline(text, bullets=config.bullets).headings,
    )
    return {"cluster_results": [result]}


async def merge(state: OutlineState, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """One LLM call merging all mini-outlines into the article outline (no call when there are none)."""
    results = state.get("cluster_results") or []
    if not results:
        return {"merged_text": "", "notes": ["nothing to merge: no clusters"]}
    config = runtime.context.config.options(OutlineConfig)
    text = await ask(
        runtime.context,
        ROLE,
        config.prompt_merge,
        max_tokens=config.merge_max_tokens,
        title=state["title"],
        outlines=render_mini_outlines(results, runtime.context.prompts),
    )
    return {"merged_text": text}


async def parse(state: OutlineState, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """Parse the merged answer into the outline."""
    parsed = parse_outline(
        state.get("merged_text", ""), bullets=runtime.context.config.options(OutlineConfig).bullets
    )
    return {
        "outline": parsed.headings,
        "outline_markdown": parsed.markdown(),
        "dropped": parsed.dropped,
        "ended": parsed.ended,
    }
