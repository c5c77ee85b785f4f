"""tc-sm90's attention forward and backward on ragged (packed, "THD")
tensors (sm90/rows.py Packed, RaggedRows): what dnn.attention records, the
matcher, the plans of the GPU family attention_ragged, the TMA descriptors
(one run of B x S packed rows), o and the gradients stored from registers,
tc-sm80's and the copied layout's fallbacks, and what ptxas makes of the
kernels (HGMMA, TMA loads, no TMA store of a ragged o, no spills). Numerics
run on a GPU (test/gpu, family attention_ragged); the semantics are checked
in test_attention_ragged.py.
"""

import pytest

import dnnc
from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import ptxas, sass
from dnnc.codegen.gpu.tensorcore import attention as attention_match
from test_attention_tensor_cores import bufferized_kernel, family_plan, linalg_kernel, tensor_of
from test_cuda_compile import _load_gpu_cases
from test_tc_sass import ARCH, MAX_SHARED, needs_sass


def ragged_graph(name, b=3, h=4, hk=2, sq=200, skv=300, d=128, backward=False,
                 both=False, interleaved=False, **masks):
    """A graph of one ragged sdpa (or sdpa_backward): every tensor packed
    (strides (S H D, D, H D, 1)); ``both``: the forward and the backward
    read the same q, k and v; ``interleaved``: q, k and v rows of 3 H D
    (cuDNN's T3HD: the three in one buffer)."""
    def build():
        g = dnnc.Graph(name=name, io_data_type="bf16")
        off_q, off_kv = (g.tensor(name=n, dim=[b + 1, 1, 1, 1], data_type="int32")
                         for n in ("off_q", "off_kv"))
        lq, lkv = (g.tensor(name=n, dim=[b, 1, 1, 1], data_type="int32")
                   for n in ("lq", "lkv"))

        def packed(n, heads, s):
            return [s * heads * d, d, heads * d, 1]

        def tensor(n, heads, s, off):
            stride = packed(n, heads, s)
            if interleaved and n in "qkv":
                stride = [s * 3 * heads * d, d, 3 * heads * d, 1]
            return g.tensor(name=n, dim=[b, heads, s, d], stride=stride, ragged_offset=off)
        q, k, v = tensor("q", h, sq, off_q), tensor("k", hk, skv, off_kv), \
            tensor("v", hk, skv, off_kv)
        pad = dict(use_padding_mask=True, seq_len_q=lq, seq_len_kv=lkv, **masks)
        if not backward or both:
            o, stats = g.sdpa(q, k, v, generate_stats=True, **pad)
            o.set_output(True).set_stride(packed("o", h, sq)).set_ragged_offset(off_q)
            stats.set_output(True)
        if backward:
            o_in, do = tensor("o_in", h, sq, off_q), tensor("do", h, sq, off_q)
            st = g.tensor(name="stats_in", dim=[b, h, sq, 1], data_type="float32")
            for x, n, heads, s, off in zip(g.sdpa_backward(q, k, v, o_in, do, st, **pad),
                                           ("dq", "dk", "dv"), (h, hk, hk), (sq, skv, skv),
                                           (off_q, off_kv, off_kv)):
                x.set_output(True).set_stride(packed(n, heads, s)).set_ragged_offset(off)
        return g
    return build


def compiled(build, arch=ARCH):
    return compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off"), basename="main")


def test_attention_attribute_records_the_offsets():
    """The offsets are the kernel's arguments after the lengths; the
    attribute carries the ragged strides (H x D for q and o, Hk x D for k
    and v)."""
    module, fn = linalg_kernel(ragged_graph("recorded_ragged", b=2, h=4, hk=2, sq=7, skv=9,
                                            d=64))
    with module.context:
        info = str(fn.attributes[attention_match.ATTR])
    assert "operands = array<i64: 0, 1, 2, -1, 3, 4, -1, -1, 5, 6, 6, 5>" in info, info
    assert "ragged_strides = array<i64: 256, 128, 128, 256>" in info, info


def test_matcher_reads_the_offsets():
    module, fn = bufferized_kernel(ragged_graph("matched_ragged", backward=True))
    with module.context:
        att = attention_match.match_backward(fn)
        assert sorted(att.ragged) == ["dk", "do", "dq", "dv", "k", "o", "q", "v"]
        assert {n: s for n, (_, s) in att.ragged.items()} == {
            "q": 512, "o": 512, "do": 512, "dq": 512, "k": 256, "v": 256, "dk": 256,
            "dv": 256}


def test_forward_plan_and_descriptors():
    """One tc-sm90 kernel: q, k and v by TMA over the B x S packed rows
    (boxes of the tile's rows of one head by 64 columns); o a plain buffer
    (stored from registers, below each entry's length); no copies."""
    package = compiled(ragged_graph("ragged_forward", use_causal_mask=True))
    (k,) = package.kernels
    assert k["strategy"] == "tc-sm90", k["reason"]
    assert "ragged q, k, v, o at each entry's packed rows (o stored a row at a time" in \
        k["reason"], k["reason"]
    manifest = package.manifest
    by_tensor = {}
    for arg in k["args"]:
        by_tensor.setdefault(tensor_of(manifest, arg), []).append(arg)
    bm, bn = k["config"]["tile"][:2]
    for x, rows, heads, s in (("q", bm, 4, 200), ("k", bn, 2, 300), ("v", bn, 2, 300)):
        (arg,) = by_tensor[x]
        assert arg["kind"] == "tma", arg
        assert arg["shape"] == [1, 3 * s, heads, 128], arg
        assert arg["box"] == [1, rows, 1, 64], arg
    assert [a["kind"] for a in by_tensor["main_k0_sdpa.o" if "main_k0_sdpa.o" in by_tensor
                                         else "sdpa0.o"]] == ["buffer"]


def test_backward_plan():
    package = compiled(ragged_graph("ragged_backward", backward=True,
                                    use_causal_mask_bottom_right=True))
    assert [k["strategy"] for k in package.kernels] == ["tc-sm90"] * 2, \
        package.kernels[0]["reason"]
    assert "ragged q, k, v, o, do, dq, dk, dv at each entry's packed rows" in \
        package.kernels[0]["reason"]


def test_forward_and_backward_share_packed_inputs():
    """q, k and v read by the forward and the backward stay where they are
    (both kernels load them by TMA): no copies, both on tc-sm90."""
    package = compiled(ragged_graph("ragged_shared", backward=True, both=True))
    assert [k["strategy"] for k in package.kernels] == ["tc-sm90"] * 3, \
        [k["reason"] for k in package.kernels]


def test_a_copied_ragged_tensor_falls_back():
    """q, k and v interleaved (rows of 3 H D, not a dense layout) are copied
    to row-major buffers, which are not runs of packed rows: the attention
    runs on simt-generic (the decomposition's gather), saying why."""
    package = compiled(ragged_graph("ragged_copied", hk=4, sq=64, skv=64, interleaved=True))
    attention = [k for k in package.kernels if "sdpa" in k["name"] and
                 not k["reason"].startswith("created by dnn-io-strides")]
    assert attention and all(k["strategy"] == "simt-generic" for k in attention)
    assert any("expected S x its sequence stride" in k["reason"] for k in attention), \
        attention[0]["reason"]


def test_tc_sm80_refuses_ragged_tensors():
    package = compiled(ragged_graph("sm80_ragged", sq=100, skv=100), arch="sm_80")
    kernels = [k for k in package.kernels if "sdpa" in k["name"] and
               not k["reason"].startswith("created by dnn-io-strides")]
    assert kernels and all(k["strategy"] == "simt-generic" for k in kernels)
    assert "not implemented in tc-sm80's attention kernel" in kernels[0]["reason"]


@pytest.fixture(scope="module")
def gpu_cases():
    return _load_gpu_cases()


def test_ragged_family_draws(gpu_cases):
    family = gpu_cases.attention_ragged
    configs = [a for graph in family.CONFIGS for a in graph]
    assert len(configs) == 64
    assert {a.heads // a.kv_heads for a in configs} == {1, 2, 8}
    assert {a.d for a in configs} == set(family.HEAD_DIMS)
    assert {a.mask for a in configs} == set(family.MASKS)
    lengths = [(x, a.sq) for a in configs for x in a.lengths_q] + \
        [(x, a.skv) for a in configs for x in a.lengths_kv]
    assert any(x == 0 for x, _ in lengths) and any(x == s for x, s in lengths)
    assert max(a.batch for a in configs) >= 6
    # Entries out of order and with gaps between some.
    assert any(list(a.starts_q) != sorted(a.starts_q) for a in configs)
    assert any(sum(a.lengths_kv) < max(s + n for s, n in zip(a.starts_kv, a.lengths_kv))
               for a in configs)
    for a in configs:
        for starts, lengths, s in ((a.starts_q, a.lengths_q, a.sq),
                                   (a.starts_kv, a.lengths_kv, a.skv)):
            spans = sorted(zip(starts, lengths))
            assert all(x + n <= y for (x, n), (y, _) in zip(spans, spans[1:]))
            assert spans[-1][0] + spans[-1][1] <= a.batch * s


@pytest.mark.parametrize("graph", [0, 5, 11])
def test_ragged_family_plans(gpu_cases, graph):
    """Every configuration on tc-sm90: a forward kernel and the backward's
    two, no copies (what the NaN the family expects in the rows no entry
    owns needs: the decomposition would write 0 there)."""
    family = gpu_cases.attention_ragged
    package = compiled(family.CASES[graph].build)
    by_config, copies = family_plan(package)
    assert sorted(by_config) == list(range(family.PER_GRAPH))
    for i, functions in by_config.items():
        kernels = [k for ks in functions.values() for k in ks]
        assert [k["strategy"] for k in kernels] == ["tc-sm90"] * 3, (i, kernels[0]["reason"])
    assert copies == {}


@needs_sass
@pytest.mark.parametrize("backward", [False, True])
def test_ragged_attention_sass(backward):
    """ptxas's verdict and the SASS: no spills, stack or local memory, shared
    memory within sm_90's; HGMMA on bf16; TMA loads; no TMA store (o and
    the gradients go from registers, row by row); the offsets read from
    global memory."""
    package = compiled(ragged_graph("ragged_sass", backward=backward, use_causal_mask=True))
    resources, cubin = ptxas.assemble_cubin(package.ptx, ARCH)
    functions = sass.functions(sass.disassemble(cubin))
    for k in package.kernels:
        assert k["strategy"] == "tc-sm90", k["reason"]
        r = resources[k["entry"]]
        assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), (k["entry"], r)
        assert k["shared_bytes"] + r.shared_bytes <= MAX_SHARED
        counts = sass.opcodes(functions[k["entry"]])
        assert counts["LDL"] == counts["STL"] == 0
        assert any(op.startswith("HGMMA.") and op.endswith(".F32.BF16") for op in counts)
        assert counts["UTMALDG"] >= 4, counts["UTMALDG"]
        assert counts["UTMASTG"] == 0


def test_a_ragged_decode_runs_unsplit_and_unfolded():
    """The heuristics fold a decode step's GQA group and split its kv tiles;
    ragged, the kernel runs unfolded and unsplit (both address padded rows),
    and the plan's config says so."""
    package = compiled(ragged_graph("ragged_decode", b=8, h=32, hk=8, sq=1, skv=8192))
    (k,) = package.kernels
    assert k["strategy"] == "tc-sm90", k["reason"]
    assert k["config"].get("fold", 1) == 1 and k["config"].get("split", 1) == 1, k["config"]
    assert k["grid"] == [1, 8 * 32, 1]


def test_a_kernel_that_does_not_say_it_reads_ragged_tensors_refuses_them():
    """check_operands refuses ragged tensors unless the kernel says it
    addresses their packed rows (ragged=True): a kernel written for padded
    tensors (one that calls it as before) falls back rather than read the
    wrong rows."""
    from types import SimpleNamespace

    from dnnc.codegen.gpu.tensorcore.sm90 import NotSupported
    from dnnc.codegen.gpu.tensorcore.sm90.flash import check_operands

    att = SimpleNamespace(ragged={"q": (None, 256), "o": (None, 256)}, element="bf16", d=64,
                          dv=64, bias=None, scale=0.125)
    with pytest.raises(NotSupported, match="ragged q, o: the kernel takes padded tensors only"):
        check_operands(att, "the kernel takes", 128, "multiples of 8 up to")
    check_operands(att, "the kernel takes", 128, "multiples of 8 up to", ragged=True)
