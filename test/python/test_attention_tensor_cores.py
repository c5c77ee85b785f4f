"""The attention forward on tensor cores without a GPU: which sdpa run as
tc-sm90's attention kernel (dnnc/codegen/gpu/tensorcore/sm90/flash.py) on
sm_90a, read from the heuristics and the plan; what the ``dnn.attention``
attribute records and what the matcher reads from it; which sdpa fall
back and why; and what ptxas makes of the kernel.

* Heuristics (``tc_sm90_attention``): an sdpa of bf16 or f16 ranks tc-sm90
  first, 128 query rows a block (64 where Sq is 64 or less: one consumer
  warpgroup), 128 kv rows a step where O, S and P fit a consumer thread's
  registers, else 64, and as many stages (up to 3) as shared memory holds;
  simt-generic comes last. f32, sm_80 and the backward stay on
  simt-generic. Every tile they rank for head dims that are multiples of
  8 up to 256 is one the kernel's ``check`` takes.
* ``dnn.attention`` (convert-dnn-to-linalg) in the linalg stage, and the
  matcher (tensorcore/attention.py) on the bufferized kernel function:
  sizes, scale, mask, and which argument each of q, k, v, bias, o and
  stats is.
* ``TENSOR_CORES``: bf16 and f16 graphs of one sdpa (grouped heads,
  causal or not, D 64 to 256, Dv != D, one query row, q, k and v stored
  (B, S, H, D)) compile to one tc-sm90 kernel: 384 threads (256 for 64
  query rows), a block per (batch x head, query tile), q, k and v read by
  TMA in boxes of the tile's rows by 64 columns, o and the statistics
  stored by the kernel itself.
* ``FALLBACKS``: a bias, f32, a head dim that is not a multiple of 8 or
  is over 256, and an o the graph keeps in f32: simt-generic on the
  expansion, the reason saying why.
* The GPU family ``attention_random`` (test/gpu/gpu_cases): its draws
  cover what it says, within its data budget; two of its graphs compile
  to one tc-sm90 kernel for each sdpa without a bias (an o stored
  (B, S, H, D) is copied out by dnn-io-strides), simt-generic for those
  with one.
* ptxas and the SASS for D 64, 128 and 256, causal and not (skipped
  without ptxas or cuobjdump, as test_tc_sass.py skips): no spills, no
  stack, no local memory; registers within what 384 threads may have;
  HGMMA of QK^T (64 x BN) and of PV (64 x Dv) on the input type only; TMA
  loads, mbarriers and ex2; no register of an accumulator or of P's
  fragments touched while its wgmma may be in flight.
"""

import math

import pytest

import dnnc
from dnnc import compiler, graph_mlir, passes, pipelines
from dnnc.codegen.gpu import irutil, ptxas, sass
from dnnc.codegen.gpu.tensorcore import attention as attention_match
from dnnc.codegen.gpu.tensorcore.sm90 import NotSupported, flash
from dnnc.heuristics import Problem, TensorSpec, rank
from test_cuda_compile import _load_gpu_cases
from test_tc_sass import ARCH, MAX_SHARED, needs_sass


def sdpa_graph(name, dtype, b, h, hk, sq, skv, d, dv=None, causal=False, stats=True,
               bias=None, interleaved=(), relu=False, **graph):
    """One sdpa of q [b, h, sq, d], k [b, hk, skv, d], v [b, hk, skv, dv]
    (dv = d unless given); ``bias`` its dims or None; ``interleaved`` the
    inputs (of "q", "k", "v") stored (B, S, H, D); ``relu``: o goes
    through a relu before it is returned (o an intermediate)."""
    dv = dv or d

    def strides(x, dims):
        if x not in interleaved:
            return None
        return [dims[2] * dims[1] * dims[3], dims[3], dims[1] * dims[3], 1]

    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, **graph)
        dims = {"q": [b, h, sq, d], "k": [b, hk, skv, d], "v": [b, hk, skv, dv]}
        q, k, v = (g.tensor(name=x, dim=dims[x], stride=strides(x, dims[x])) for x in "qkv")
        bias_t = g.tensor(name="bias", dim=bias) if bias else None
        o, s = g.sdpa(q, k, v, bias=bias_t, use_causal_mask=causal, generate_stats=stats)
        (g.relu(o) if relu else o).set_output(True)
        if s is not None:
            s.set_output(True)
        return g
    return build


# name: graph builder. Grouped heads (8 over 2: 4 query heads a kv head),
# query and kv lengths that are no multiple of a tile.
TENSOR_CORES = {
    "d64_bf16": sdpa_graph("d64_bf16", "bf16", 2, 8, 2, 300, 333, 64),
    "d64_causal_bf16": sdpa_graph("d64_causal_bf16", "bf16", 2, 8, 2, 300, 333, 64,
                                  causal=True),
    "d128_f16": sdpa_graph("d128_f16", "f16", 2, 8, 2, 300, 333, 128),
    "d128_causal_f16": sdpa_graph("d128_causal_f16", "f16", 2, 8, 2, 300, 333, 128,
                                  causal=True),
    "d256_bf16": sdpa_graph("d256_bf16", "bf16", 2, 8, 2, 300, 333, 256),
    "d256_causal_f16": sdpa_graph("d256_causal_f16", "f16", 2, 8, 2, 300, 333, 256,
                                  causal=True),
    "d192_dv128_causal_bf16": sdpa_graph("d192_dv128_causal_bf16", "bf16", 1, 4, 4, 129, 257,
                                         192, dv=128, causal=True),
    "d80_no_stats_f16": sdpa_graph("d80_no_stats_f16", "f16", 3, 2, 2, 77, 1000, 80,
                                   stats=False),
    # One query row (a decoding step) over 8 heads that share one kv head.
    "decode_bf16": sdpa_graph("decode_bf16", "bf16", 4, 8, 1, 1, 4097, 128),
    "heads_interleaved_f16": sdpa_graph("heads_interleaved_f16", "f16", 2, 4, 2, 100, 120, 64,
                                        causal=True, interleaved=("q", "k", "v")),
}
# name: (graph builder, what the reason starts with); every sdpa kernel of
# the plan is simt-generic.
FALLBACKS = {
    "bias_bf16": (sdpa_graph("bias_bf16", "bf16", 1, 2, 2, 64, 80, 64, bias=[1, 1, 64, 80]),
                  "tc-sm90 does not apply (an additive bias (not yet in the tensor-core "
                  "kernel)): simt-generic"),
    "f32": (sdpa_graph("f32", "f32", 1, 2, 2, 64, 80, 64),
            "no faster strategy planned (sdpa: 64x80x64 (S x Skv x D) x2 batch f32, an f32 "
            "multiply"),
    # D = 60: a row of 120 bytes, which TMA cannot step by; the matcher says
    # so before the kernel's own check (a multiple of 8 up to 256) runs.
    "d60_bf16": (sdpa_graph("d60_bf16", "bf16", 1, 1, 1, 64, 80, 60),
                 "tc-sm90 does not apply (q's dim 2 has stride 120 bytes: expected a "
                 "multiple of 16)"),
    # D = 264: no tile of the kernel fits (the heuristics rank none).
    "d264_bf16": (sdpa_graph("d264_bf16", "bf16", 1, 2, 2, 64, 80, 264),
                  "tc-sm90 not implemented yet (sdpa: 64x80x264 (S x Skv x D) x2 batch bf16)"),
    # o goes on to a relu: in a bf16 graph an intermediate is f32, which the
    # kernel does not store.
    "o_f32_bf16": (sdpa_graph("o_f32_bf16", "bf16", 1, 2, 2, 64, 80, 64, relu=True),
                   "tc-sm90 does not apply (o is f32, q is bf16: expected one type): "
                   "simt-generic"),
}
# Kept in bf16 (intermediate_data_type), the same o is what the kernel takes.
INTERMEDIATE_BF16 = sdpa_graph("o_bf16_bf16", "bf16", 1, 2, 2, 64, 80, 64, relu=True,
                               intermediate_data_type="bf16")
# (D, causal): the graphs whose SASS is checked.
SASS_CASES = {(64, False): "d64_bf16", (64, True): "d64_causal_bf16",
              (128, False): "d128_f16", (128, True): "d128_causal_f16",
              (256, False): "d256_bf16", (256, True): "d256_causal_f16"}


def problem(sq, skv, d, dv, dtype="bf16", arch=ARCH, b=2, h=8, hk=2, anchor="sdpa"):
    """The heuristics' Problem of an sdpa kernel (q, k, v; o)."""
    ins = (TensorSpec((b, h, sq, d), dtype), TensorSpec((b, hk, skv, d), dtype),
           TensorSpec((b, hk, skv, dv), dtype))
    outs = (TensorSpec((b, h, sq, dv), dtype),)
    return Problem(kernel="k", anchor=anchor, ops=(anchor,), inputs=ins, outputs=outs,
                   arch=arch, anchor_inputs=ins, anchor_outputs=outs)


def attention(d, dv, element="bf16", scale=0.125, bias=None):
    """An Attention as the matcher would return it, buffers left out (all
    ``flash.check`` reads are its sizes, type, scale and bias)."""
    return attention_match.Attention(None, None, None, None, None, bias, 2, 8, 2, 1000, 1000,
                                     d, dv, scale, False, element)


# ----------------------------------------------------------------------------
# Heuristics


@pytest.mark.parametrize("sq, d, dv, dtype, tile, stages", [
    (1024, 64, 64, "bf16", (128, 128), 3),
    (1024, 128, 128, "f16", (128, 128), 3),
    # Q (64 KiB) and two stages of 64-row K and V tiles fill shared memory.
    (1024, 256, 256, "bf16", (128, 64), 2),
    # 128 kv rows a step: 2 stages of K (192 wide) and V (128) tiles beside Q.
    (1024, 192, 128, "bf16", (128, 128), 2),
    # O of Dv = 256 takes 128 registers a thread: 64 kv rows a step.
    (1024, 64, 256, "f16", (128, 64), 3),
    # 64 query rows or fewer: one consumer warpgroup.
    (64, 64, 64, "bf16", (64, 128), 3),
    (1, 128, 128, "bf16", (64, 128), 3),
    (65, 64, 64, "f16", (128, 128), 3),
])
def test_heuristics_rank_the_attention_kernel(sq, d, dv, dtype, tile, stages):
    configs = rank(problem(sq, 1000, d, dv, dtype))
    first = configs[0]
    assert (first.strategy, first.tile, first.stages) == ("tc-sm90", tile, stages), \
        [(c.strategy, c.tile, c.stages) for c in configs]
    assert first.block == (128 * (1 + tile[0] // 64), 1, 1)
    assert first.reason.startswith(
        f"attention forward (sdpa: {sq}x1000x{d} (S x Skv x D) x16 batch {dtype}): {tile[0]} "
        f"query rows a block, {tile[1]} kv rows a step, {stages} stages"), first.reason
    strategies = [c.strategy for c in configs]
    assert strategies[-1] == "simt-generic" and set(strategies) == {"tc-sm90", "simt-generic"}


@pytest.mark.parametrize("dtype, arch, anchor, why", [
    ("f32", ARCH, "sdpa", "no faster strategy planned (sdpa: 100x100x64 (S x Skv x D) x16 "
                          "batch f32, an f32 multiply"),
    ("bf16", "sm_80", "sdpa", "tc-sm80 not implemented yet (sdpa: 100x100x64"),
    ("bf16", ARCH, "sdpa_backward", "tc-sm90 not implemented yet (sdpa_backward: 100x100x64"),
])
def test_heuristics_keep_other_attention_on_simt_generic(dtype, arch, anchor, why):
    configs = rank(problem(100, 100, 64, 64, dtype, arch, anchor=anchor))
    assert {c.strategy for c in configs} == {"simt-generic"}
    assert configs[0].reason.startswith(why), configs[0].reason


def test_every_ranked_tile_is_one_the_kernel_takes():
    """For every head dim D and Dv that is a multiple of 8 up to 256 and
    for one and many query tiles, the heuristics rank a tc-sm90 config and
    ``flash.check`` takes each one they rank (the two agree on registers
    and shared memory)."""
    dims = range(8, 257, 8)
    for sq in (1, 64, 65, 4097):
        for d in dims:
            for dv in dims:
                configs = [c for c in rank(problem(sq, 1000, d, dv))
                           if c.strategy == "tc-sm90"]
                assert configs, (sq, d, dv)
                for c in configs:
                    flash.check(attention(d, dv), flash.FlashTile(*c.tile, c.stages))


@pytest.mark.parametrize("att, tile, why", [
    (attention(64, 64, "f32"), (128, 128, 3), "f32 q, k, v"),
    (attention(60, 60), (128, 128, 3), "head dim D = 60: expected a multiple of 8 up to 256"),
    (attention(64, 264), (128, 64, 2), "head dim Dv = 264"),
    (attention(64, 64, bias=object()), (128, 128, 3), "an additive bias"),
    (attention(64, 64, scale=-0.125), (128, 128, 3), "scale -0.125: expected a positive scale"),
    (attention(64, 64), (256, 128, 3), "tile 256x128 in 3 stages"),
    (attention(64, 256), (128, 128, 2), "Dv 256 with 128 kv rows a step: 224 accumulator"),
    (attention(256, 256), (128, 64, 3), "3 stages of 64 kv rows need"),
])
def test_kernel_check_says_why(att, tile, why):
    with pytest.raises(NotSupported) as err:
        flash.check(att, flash.FlashTile(*tile))
    assert why in str(err.value), str(err.value)


# ----------------------------------------------------------------------------
# dnn.attention and the matcher


def linalg_kernel(build):
    """The kernel function of ``build``'s one sdpa, in the linalg stage."""
    module = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=ARCH, tuning_db="off", stop_after="linalg"))
    with module.context:
        (fn,) = [f for f in irutil.kernel_functions(module)
                 if "sdpa" in irutil.symbol(f)]
    return module, fn


def test_attention_attribute_records_operands_and_results():
    build = sdpa_graph("recorded", "bf16", 1, 4, 2, 7, 9, 64, dv=32, causal=True,
                       bias=[1, 4, 7, 9])
    module, fn = linalg_kernel(build)
    with module.context:
        info = str(fn.attributes[attention_match.ATTR])
    # q, k, v and bias are the kernel's arguments 0-3; o and stats its two
    # returned values, in that order.
    assert info == ("{causal = true, operands = array<i64: 0, 1, 2, 3>, results = "
                    "array<i64: 0, 1>, returned = 2 : i64, scale = 1.250000e-01 : f64}"), info


def test_attention_attribute_only_on_the_sdpa_kernel():
    """Of ``o_f32_bf16``'s kernels, the sdpa's records it (its o returned
    as it is, in f32: what the matcher then refuses), the relu's does not."""
    module, fn = linalg_kernel(FALLBACKS["o_f32_bf16"][0])
    with module.context:
        assert "results = array<i64: 0, 1>, returned = 2" in str(
            fn.attributes[attention_match.ATTR])
        others = [f for f in irutil.kernel_functions(module) if irutil.symbol(f) !=
                  irutil.symbol(fn)]
        assert others and all(attention_match.ATTR not in f.attributes for f in others)


def test_matcher_reads_the_bufferized_kernel():
    """attention.match on the kernel function as dnn-map-tensor-cores sees
    it: out-parameters after the inputs, q stored (B, S, H, D) as a strided
    memref."""
    build = sdpa_graph("matched", "f16", 2, 8, 2, 77, 130, 96, dv=64, causal=True,
                       interleaved=("q",))
    module = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=ARCH, tuning_db="off", stop_after="configured"))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-tensor-cores")]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    with module.context:
        (fn,) = [f for f in irutil.kernel_functions(module) if "sdpa" in irutil.symbol(f)]
        att = attention_match.match(fn)
        arguments = list(irutil.body(fn).arguments)
        assert [att.q, att.k, att.v, att.o, att.stats] == arguments
        assert "strided<[59136, 96, 768, 1]>" in str(att.q.type)
    assert att.bias is None
    assert (att.batch, att.heads, att.kv_heads, att.group, att.sq, att.skv, att.d, att.dv) == \
        (2, 8, 2, 4, 77, 130, 96, 64)
    assert (att.scale, att.causal, att.element) == (1 / math.sqrt(96), True, "f16")
    assert att.flops() == 2 * 2 * 8 * 77 * 130 * (96 + 64) // 2


# ----------------------------------------------------------------------------
# Plans


class Built:
    """Each graph compiled and assembled at most once."""

    def __init__(self):
        self.packages, self.assembled = {}, {}

    def package(self, name):
        if name not in self.packages:
            build = TENSOR_CORES[name] if name in TENSOR_CORES else \
                FALLBACKS[name][0] if name in FALLBACKS else INTERMEDIATE_BF16
            self.packages[name] = compiler.compile_module(
                graph_mlir.to_module(build()),
                compiler.Options(target="cuda", arch=ARCH, tuning_db="off"), basename=name)
        return self.packages[name]

    def assembly(self, name):
        """({entry: KernelResources}, {entry: SASS text})."""
        if name not in self.assembled:
            resources, cubin = ptxas.assemble_cubin(self.package(name).ptx, ARCH)
            self.assembled[name] = resources, sass.functions(sass.disassemble(cubin))
        return self.assembled[name]


@pytest.fixture(scope="module")
def built():
    return Built()


def sizes(name):
    """(b, h, sq, d, dv) of graph ``name``'s sdpa, and its inputs by name."""
    g = TENSOR_CORES[name]()
    inputs = {t.name: t for t in g.inputs}
    b, h, sq, d = (int(x) for x in inputs["q"].dim)
    return (b, h, sq, d, int(inputs["v"].dim[3])), inputs


@pytest.mark.parametrize("name", sorted(TENSOR_CORES))
def test_one_tensor_core_kernel(built, name):
    kernels = built.package(name).kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm90"], \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    (k,) = kernels
    (b, h, sq, d, dv), inputs = sizes(name)
    bm, bn = k["config"]["tile"]
    expected = rank(problem(sq, int(inputs["k"].dim[2]), d, dv,
                            inputs["q"].get_data_type().mlir, b=b, h=h,
                            hk=int(inputs["k"].dim[1])))[0]
    assert (bm, bn, k["config"]["stages"]) == (*expected.tile, expected.stages)
    assert k["block"] == [128 * (1 + bm // 64), 1, 1]
    assert k["grid"] == [b * h, -(-sq // bm), 1]
    assert k["shared_bytes"] == flash.smem_bytes(flash.FlashTile(bm, bn, k["config"]["stages"]),
                                                 d, dv) <= MAX_SHARED
    assert (f"attention forward: {bm} query rows a block ({bm // 64} consumer warpgroups), "
            f"{bn} kv rows a step in a {k['config']['stages']}-stage ring; S = QK^T and O += PV "
            "on wgmma, the online softmax in registers") in k["reason"], k["reason"]
    # q, k and v by TMA, boxes of the tile's rows by 64 columns in the order
    # their dims lie; o (and stats) stored by the kernel.
    tma, stored = k["args"][:3], k["args"][3:]
    assert [a["kind"] for a in tma] == ["tma"] * 3 and \
        [a["kind"] for a in stored] == ["buffer"] * len(stored), k["args"]
    for arg, x, rows in zip(tma, "qkv", (bm, bn, bn)):
        strides = [int(s) for s in inputs[x].get_stride()]
        order = sorted(range(4), key=lambda i: -strides[i])
        assert arg["box"] == [[1, 1, rows, 64][i] for i in order], (x, arg)
    assert len(stored) == (2 if name != "d80_no_stats_f16" else 1)


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_fallback_says_why(built, name):
    kernels = built.package(name).kernels
    why = FALLBACKS[name][1]
    sdpa = [k for k in kernels if "sdpa" in k["entry"]]
    assert sdpa and all(k["strategy"] == "simt-generic" for k in sdpa), \
        [(k["entry"], k["strategy"]) for k in kernels]
    assert not any(k["strategy"] == "tc-sm90" for k in kernels)
    for k in sdpa:
        assert k["reason"].startswith(why), k["reason"]


def test_bf16_intermediate_o_runs_on_tensor_cores(built):
    """The graph of ``o_f32_bf16`` with bf16 intermediates: the sdpa is one
    tc-sm90 kernel, the relu a kernel of its own."""
    kernels = built.package("o_bf16_bf16").kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm90", "simt-pointwise"], \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]


# ----------------------------------------------------------------------------
# The GPU family attention_random


@pytest.fixture(scope="module")
def family():
    return _load_gpu_cases().attention_random


def test_random_attention_draws(family):
    configs = [a for graph in family.CONFIGS for a in graph]
    assert len(configs) == family.GRAPHS * family.PER_GRAPH >= 300
    assert all(sum(a.stored_bytes() for a in graph) <= family.GRAPH_BUDGET
               for graph in family.CONFIGS)
    assert all(a.stored_bytes() <= family.LONG_BUDGET for a in configs)
    plain = [a for a in configs if a.tensor_core_eligible()]
    assert {a.batch for a in plain} == set(range(1, 9))
    assert {a.heads // a.kv_heads for a in plain} == set(family.GROUPS)
    assert {a.sq for a in plain} == {a.skv for a in plain} == set(family.SIZES)
    assert set(family.HEAD_DIMS) <= {a.d for a in plain}
    assert all(a.d % 8 == 0 and a.dv % 8 == 0 and max(a.d, a.dv) <= 256 for a in configs)
    assert any(a.d != a.dv for a in plain) and any((a.d, a.dv) == (192, 128) for a in plain)
    for share in (lambda a: a.causal, lambda a: a.stats, lambda a: a.interleaved,
                  lambda a: a.scale is not None, lambda a: a.bias is not None):
        assert 0 < sum(bool(share(a)) for a in configs) < len(configs)
    assert sum(a.stats for a in configs) > len(configs) // 2
    # The longest sequences only in a batch of one.
    assert all(a.batch == 1 for a in configs if max(a.sq, a.skv) == 4097)
    biased = [a for a in configs if a.bias]
    assert all(max(a.sq, a.skv) <= 77 and a.batch * a.heads <= 8 for a in biased)


@pytest.mark.parametrize("graph", [0, 3])
def test_random_attention_plans(family, graph):
    case = family.CASES[graph]
    configs = family.CONFIGS[graph]
    package = compiler.compile_module(graph_mlir.to_module(case.build()), compiler.Options(
        target="cuda", arch=ARCH, tuning_db="off"), basename="main")
    by_sdpa = {}
    for k in package.kernels:
        if "_sdpa" in k["name"]:
            by_sdpa.setdefault(int(k["name"].split("_k")[1].split("_")[0]), []).append(k)
        else:
            assert k["reason"].startswith("created by dnn-io-strides"), k["reason"]
    assert sorted(by_sdpa) == list(range(len(configs)))
    for i, att in enumerate(configs):
        kernels = by_sdpa[i]
        if att.tensor_core_eligible():
            assert [k["strategy"] for k in kernels] == ["tc-sm90"], (att, kernels[0]["reason"])
            assert kernels[0]["block"][0] == (256 if att.sq <= 64 else 384)
        else:
            assert all(k["strategy"] == "simt-generic" and "an additive bias" in k["reason"]
                       for k in kernels), att
    assert any(not a.tensor_core_eligible() for a in configs) == (graph == 3)


# ----------------------------------------------------------------------------
# ptxas and the SASS


@needs_sass
@pytest.mark.parametrize("d, causal", sorted(SASS_CASES))
def test_attention_sass(built, d, causal):
    """ptxas's verdict and the SASS of the kernel: no spills, stack or local
    memory; registers within 65536 / threads; shared memory within sm_90's;
    HGMMA 64 x BN x 16 (S = QK^T) and 64 x Dv x 16 (PV) on the input type
    only; TMA loads (UTMALDG), mbarriers (SYNCS), ex2 (MUFU.EX2); no
    accumulator or P fragment register touched while its wgmma may run."""
    name = SASS_CASES[d, causal]
    (k,) = built.package(name).kernels
    resources, functions = built.assembly(name)
    r = resources[k["entry"]]
    threads = k["block"][0]
    assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), (k["entry"], r)
    assert 0 < r.registers <= 65536 // threads // 8 * 8, (k["entry"], r)
    assert k["shared_bytes"] + r.shared_bytes <= MAX_SHARED, (k["shared_bytes"], r)
    text = functions[k["entry"]]
    counts = sass.opcodes(text)
    assert counts["LDL"] == counts["STL"] == 0, (counts["LDL"], counts["STL"])
    suffix = ".BF16" if name.endswith("bf16") else ""
    bn = k["config"]["tile"][1]
    assert {op for op in counts if op.startswith("HGMMA.")} == \
        {f"HGMMA.64x{bn}x16.F32{suffix}", f"HGMMA.64x{d}x16.F32{suffix}"}, sorted(counts)
    assert counts["UTMALDG"] > 0 and counts["SYNCS"] > 0 and counts["MUFU.EX2"] > 0, \
        sorted(counts)
    assert sass.wgmma_hazards(text) == []
    assert sass.wgmma_fragment_hazards(text) == []
