"""dnn-dedup-kernels in the CUDA pipeline: identical kernels of a graph are
compiled once (one PTX entry, launched by each of their launches), and the
kept kernels' PTX is what it was without the pass, byte for byte but the
function number LLVM puts in local labels (``$L__BB2_5`` of the module's
third function is ``$L__BB1_5`` when it becomes the second). No GPU."""

import re

import pytest

import dnnc
from dnnc import compiler, pipelines
from dnnc.codegen.gpu import ptx


def _graph(widths):
    """One bf16 matmul + relu per width, each of its own inputs: equal widths
    make identical kernels."""
    g = dnnc.Graph(name="repeat", io_data_type="bf16", compute_data_type="f32")
    for i, n in enumerate(widths):
        x = g.tensor(name=f"x{i}", dim=[1, 256, 128])
        w = g.tensor(name=f"w{i}", dim=[1, 128, n])
        g.relu(g.matmul(x, w)).set_output(True)
    return g


def _entry_texts(text):
    """{entry: its PTX, from ``.entry`` to the next entry's ``// .globl``
    line}, local labels made independent of the function's number."""
    out = {}
    for m in re.finditer(r"^\.visible\s+\.entry\s+([\w$]+)", text, re.M):
        end = text.find("// .globl", m.end())
        body = text[m.start():end if end >= 0 else len(text)]
        out[m.group(1)] = re.sub(r"\$L__BB\d+_", "$L__BB_", body)
    return out


@pytest.fixture(scope="module")
def packages():
    """The package of _graph([128, 128, 64]) with and without the pass."""
    graph = _graph([128, 128, 64])
    kept = compiler.compile_cuda(graph, "sm_90a", cache=False, cubin=False)
    without = tuple(p for p in pipelines.GPU.passes if p != "dnn-dedup-kernels")
    assert len(without) == len(pipelines.GPU.passes) - 1
    saved = pipelines.GPU
    pipelines.GPU = pipelines.Stage(saved.name, without)
    try:
        plain = compiler.compile_cuda(graph, "sm_90a", cache=False, cubin=False)
    finally:
        pipelines.GPU = saved
    return kept, plain


def test_identical_kernels_are_compiled_once(packages):
    kept, plain = packages
    # Without the pass, three kernels reach LLVM and ptxas; with it, two.
    assert len(ptx.entries(plain.ptx)) == 3
    entries = list(ptx.entries(kept.ptx))
    assert len(entries) == 2
    launches = [(k["name"], k["entry"]) for k in kept.manifest["kernels"]]
    assert [name for name, _ in launches] == \
        [k["name"] for k in plain.manifest["kernels"]]
    # Both 128-wide matmuls launch the first one's entry; the 64-wide its own.
    assert launches[0][1] == launches[1][1] == entries[0]
    assert launches[2][1] == entries[1] != entries[0]


def test_kept_kernels_ptx_is_unchanged(packages):
    kept, plain = packages
    before, after = _entry_texts(plain.ptx), _entry_texts(kept.ptx)
    for name, text in after.items():
        assert before[name] == text
    # The dropped kernel was the kept one's code under another name.
    dropped = (set(before) - set(after)).pop()
    first = kept.manifest["kernels"][0]["entry"]
    assert before[dropped].replace(dropped, first) == before[first]


def test_launch_records_keep_their_grids(packages):
    kept, plain = packages
    for a, b in zip(kept.manifest["kernels"], plain.manifest["kernels"]):
        assert {k: v for k, v in a.items() if k != "entry"} == \
            {k: v for k, v in b.items() if k != "entry"}
