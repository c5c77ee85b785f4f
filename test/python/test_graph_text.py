"""print(graph) and the inputs no op reads (dnnc/graph_text.py)."""

import re
import warnings

import pytest

import dnnc
from dnnc.graph_text import UnusedInputWarning


def _conv_relu(extra_input=False):
    g = dnnc.Graph(name="block", io_data_type=dnnc.data_type.BFLOAT16)
    x = g.tensor(name="x", dim=[2, 8, 5, 5], stride=[200, 1, 40, 8])
    w = g.tensor(name="w", dim=[8, 8, 3, 3], stride=[72, 1, 24, 8])
    if extra_input:
        g.tensor(name="bias_not_wired", dim=[1, 8, 1, 1])
    y = g.relu(g.conv_fprop(x, w, padding=[1, 1]), name="act")
    y.set_output(True)
    return g


def test_repr_shows_inputs_ops_and_outputs():
    text = repr(_conv_relu())
    assert text.splitlines()[0] == "Graph 'block': io bf16, intermediate f32, compute default"
    assert "x  [2, 8, 5, 5]  stride [200, 1, 40, 8]  bf16" in text
    assert "conv_fprop(x=x, w=w; pre_padding=[1, 1], post_padding=[1, 1]" in text
    # the convolution's result is virtual (the intermediate type), the relu's an output
    assert "-> conv_fprop0.y [2, 8, 5, 5] f32" in text
    assert re.search(r"\n    act +relu\(x=conv_fprop0\.y\) -> act\.y \[2, 8, 5, 5\] bf16\n", text)
    assert text.rstrip().endswith("outputs\n    act.y")
    assert "not read" not in text
    assert str(_conv_relu()) == text


def test_repr_of_an_empty_graph():
    text = repr(dnnc.Graph())
    assert "inputs: none" in text and "ops: none" in text and "outputs: none" in text


def test_unused_input_listed_and_warned_on_compile():
    g = _conv_relu(extra_input=True)
    assert [t.name for t in g.unused_inputs()] == ["bias_not_wired"]
    assert "not read by any op: bias_not_wired" in repr(g)
    with pytest.warns(UnusedInputWarning, match=r"input 'bias_not_wired' \[1, 8, 1, 1\] is "
                                                r"not read by any op"):
        g.compile()


def test_no_warning_when_every_input_is_read():
    g = _conv_relu()
    assert g.unused_inputs() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnusedInputWarning)
        g.compile()


def test_ragged_offsets_count_as_read():
    g = dnnc.Graph(io_data_type=dnnc.data_type.FLOAT)
    off = g.tensor(name="q_offsets", dim=[3, 1, 1, 1], data_type=dnnc.data_type.INT32)
    lengths = g.tensor(name="lengths", dim=[2, 1, 1, 1], data_type=dnnc.data_type.INT32)
    q = g.tensor(name="q", dim=[2, 2, 4, 8], stride=[64, 8, 16, 1], ragged_offset=off)
    k = g.tensor(name="k", dim=[2, 2, 4, 8])
    v = g.tensor(name="v", dim=[2, 2, 4, 8])
    o, _ = g.sdpa(q, k, v, use_padding_mask=True, seq_len_q=lengths, seq_len_kv=lengths)
    o.set_output(True)
    assert g.unused_inputs() == []
