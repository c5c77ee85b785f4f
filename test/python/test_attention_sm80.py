"""tc-sm80's attention forward without a GPU
(dnnc/codegen/gpu/tensorcore/sm80/flash.py): which sdpa run on it, what
the heuristics rank, what falls back and why, what ptxas makes of it, and
what it computes, run on the CPU by test/python/kernel_interpreter.py.

* Heuristics (``tc_sm80_attention``): on sm_80 an sdpa of bf16 or f16
  ranks tc-sm80 first (128 query rows over 4 warps of 32 for head dims up
  to 128, 64 kv rows a step up to 64 and 32 above; with a bias or above
  128, over 8 warps of 16; 64 query rows for 64 or fewer), then
  simt-generic; every tile they rank for head
  dims that are multiples of 8 up to 256, with a bias or not, is one the
  kernel's ``check`` takes within sm_80's shared memory. (The backward:
  test_attention_sm80_backward.py.)
* ``check`` refuses with the reason: f32, head dims that are no multiple
  of 8 or over 256, a bias of the other 16-bit type, a tile whose O, S, P
  (and Q, bias) exceed a thread's registers, and any field a newer
  matcher sets that the kernel does not implement.
* Plans: graphs of one sdpa compiled for sm_80 (masks, bias, GQA, D 64 to
  256, Dv != D, f16 and bf16, strided q, k, v, an f32 o) run one tc-sm80
  kernel, grid (query tiles, B x H), the plan saying so; those it does
  not take run the expansion on simt-generic, the reason naming why. On
  sm_90a a config override naming tc-sm80 reaches the kernel.
* ptxas and the SASS for D 64, 128 and 256, causal or not, with a bias,
  the masks, f16: no spills, stack or local memory, HMMA.16816 of the
  input type, ldmatrix (LDSM, transposed for V), cp.async (LDGSTS),
  MUFU.EX2.
* Numerics: the kernel's IR interpreted on the CPU against the NumPy
  reference (o within the output type's tolerance, the statistics and
  their -inf for rows that see no key).
"""

import dataclasses

import numpy as np
import pytest
from mlir import ir

from dnnc import compiler, graph_mlir, passes, pipelines
from dnnc.codegen.gpu import irutil, sass
from dnnc.codegen.gpu.tensorcore import attention as attention_match
from dnnc.codegen.gpu.tensorcore.sm80 import NotSupported, flash
from dnnc.heuristics import rank
from dnnc.heuristics.contraction import TC80_SHARED, tc_sm80_attention_tiles
from kernel_builds import (Builds, assert_no_local_memory, assert_no_spills, assert_shared_fit,
                           family)
from kernel_interpreter import run_kernel
from test_attention_tensor_cores import (
    BiasValue, problem, ptx_entries, sdpa_graph,
)
from test_cuda_compile import _load_gpu_cases
from test_tc_sass import needs_sass

ARCH = "sm_80"
SM80_SHARED = TC80_SHARED["sm_80"]


def attention(d, dv, element="bf16", scale=0.125, bias=None, kind=attention_match.Attention,
              **extra):
    """An Attention as the matcher would return it, buffers left out (what
    ``check`` reads are its sizes, type, scale and bias)."""
    return kind(None, None, None, None, None, bias and BiasValue(bias), 2, 8, 2, 1000, 1000,
                d, dv, scale, False, element, **extra)


# ----------------------------------------------------------------------------
# Heuristics


@pytest.mark.parametrize("sq, d, dv, bias, tile, warps", [
    # Head dims up to 64: 4 warps of 32 query rows, Q in registers.
    (1024, 64, 64, None, (128, 64), 4),
    (1024, 32, 64, None, (128, 64), 4),
    # With a bias its values take registers: 8 warps of 16.
    (1024, 64, 64, [1, 8, 1024, 1000], (128, 64), 8),
    # Up to 128: 4 warps of 32, 32 kv rows a step, Q read again each step.
    (1024, 80, 80, None, (128, 32), 4),
    (1024, 128, 128, None, (128, 32), 4),
    (1024, 64, 128, None, (128, 32), 4),
    (1024, 128, 128, [1, 1, 1, 1000], (128, 64), 8),
    # Above 128: 32 kv rows a step (the ring within sm_80's 163 KiB).
    (1024, 192, 128, None, (128, 32), 8),
    (1024, 256, 256, None, (128, 32), 8),
    # 64 query rows or fewer: 64 a block.
    (64, 64, 64, None, (64, 64), 4),
    (1, 128, 128, None, (64, 64), 4),
    (7, 256, 256, None, (64, 32), 4),
])
def test_heuristics_rank_tc_sm80(sq, d, dv, bias, tile, warps):
    configs = rank(problem(sq, 1000, d, dv, "bf16", arch=ARCH, bias=bias))
    first = configs[0]
    assert (first.strategy, first.tile, first.stages, first.block) == \
        ("tc-sm80", tile, 2, (32 * warps, 1, 1)), [(c.strategy, c.tile, c.block) for c in configs]
    fast = [c for c in configs if c.strategy == "tc-sm80"]
    assert configs[:len(fast)] == fast and {c.strategy for c in configs[len(fast):]} == \
        {"simt-generic"}
    assert first.reason.startswith(
        f"attention forward (sdpa: {sq}x1000x{d} (S x Skv x D) x16 batch bf16): {tile[0]} query "
        f"rows a block ({warps} warps of {tile[0] // warps}), {tile[1]} kv rows a step, 2 "
        "stages"), first.reason


@pytest.mark.parametrize("biased", [False, True])
def test_every_ranked_tile_fits(biased):
    """For every D and Dv that are multiples of 8 up to 256, with a bias or
    not, the heuristics rank tc-sm80 tiles and the kernel's check takes
    each one within an sm_80 block's shared memory."""
    dims = range(8, 257, 8)
    with ir.Context():
        for sq in (1, 64, 65, 4096):
            for d in dims:
                for dv in dims:
                    tiles = tc_sm80_attention_tiles(sq, d, dv, biased)
                    assert tiles, (sq, d, dv)
                    for tile in tiles:
                        assert flash.fits(tile, d, dv, biased, SM80_SHARED) is None
                        flash.check(attention(d, dv, bias="f32" if biased else None), tile)


@pytest.mark.parametrize("build, why", [
    (lambda: problem(100, 100, 264, 64, arch=ARCH),
     "tc-sm80's attention kernel does not take it (sdpa: 100x100x264 (S x Skv x D) x16 batch "
     "bf16): head dims up to 256"),
    (lambda: problem(100, 100, 64, 64, "f32", arch=ARCH),
     "no faster strategy planned (sdpa: 100x100x64 (S x Skv x D) x16 batch f32, an f32 "
     "multiply"),
])
def test_heuristics_keep_the_rest_on_simt_generic(build, why):
    configs = rank(build())
    assert {c.strategy for c in configs} == {"simt-generic"}
    assert configs[0].reason.startswith(why), configs[0].reason


# ----------------------------------------------------------------------------
# check


Padded = dataclasses.make_dataclass("Padded", [("seq_len_q", object, None)],
                                    bases=(attention_match.Attention,))


@pytest.mark.parametrize("att, tile, why", [
    (attention(64, 64, "f32"), flash.FlashTile(), "f32 q, k, v (tc-sm80's attention kernel "
                                                  "takes bf16 and f16)"),
    (attention(60, 64), flash.FlashTile(), "head dim D = 60: tc-sm80's attention kernel takes "
                                           "multiples of 8 up to 256"),
    (attention(64, 264), flash.FlashTile(), "head dim Dv = 264"),
    (attention(64, 64, bias="f16"), flash.FlashTile(), "a f16 bias with bf16 q, k, v: expected "
                                                       "bf16 or f32"),
    (attention(64, 64, scale=0.0), flash.FlashTile(), "scale 0.0: expected a positive scale"),
    (attention(128, 128), flash.FlashTile(128, 64, 2, 4),
     "D 128, Dv 128 with 32 query rows a warp and 64 kv rows a step: 224 registers a thread "
     "for O, S, P, expected at most 192"),
    (attention(64, 64, bias="bf16"), flash.FlashTile(128, 64, 2, 4),
     "224 registers a thread for O, S, P and the bias"),
    (attention(64, 64), flash.FlashTile(256, 64, 2, 4), "tile 256x64 in 2 stages over 4 warps"),
    (attention(64, 64), flash.FlashTile(128, 64, 1, 8), "expected 4 or 8 warps"),
    # Past an sm_90 block's shared memory.
    (attention(256, 64), flash.FlashTile(128, 64, 4, 8), "bytes of shared memory"),
    # A feature a newer matcher records and this kernel does not implement.
    (attention(64, 64, kind=Padded, seq_len_q=object()), flash.FlashTile(),
     "the attention's seq len q: not implemented in tc-sm80's attention kernel"),
])
def test_check_says_why(att, tile, why):
    with ir.Context(), pytest.raises(NotSupported) as err:
        flash.check(att, tile)
    assert why in str(err.value), str(err.value)


def test_check_ignores_unset_new_fields():
    """A field a newer matcher adds, left unset, is no reason to refuse."""
    with ir.Context():
        flash.check(attention(64, 64, kind=Padded), flash.FlashTile())


# ----------------------------------------------------------------------------
# Plans


# name: (graph builder, config override or None, arch)
CASES = {
    "d64_bf16": sdpa_graph("d64_bf16", "bf16", 2, 8, 2, 300, 333, 64),
    "d64_causal_f16": sdpa_graph("d64_causal_f16", "f16", 2, 8, 2, 300, 333, 64, causal=True),
    "d128_bf16": sdpa_graph("d128_bf16", "bf16", 2, 8, 2, 300, 333, 128),
    "d128_causal_f16": sdpa_graph("d128_causal_f16", "f16", 2, 8, 2, 300, 333, 128,
                                  causal=True),
    "d256_bf16": sdpa_graph("d256_bf16", "bf16", 1, 4, 4, 300, 333, 256),
    "d256_causal_f16": sdpa_graph("d256_causal_f16", "f16", 1, 4, 4, 300, 333, 256,
                                  causal=True),
    "d192_dv128_bf16": sdpa_graph("d192_dv128_bf16", "bf16", 1, 4, 4, 129, 257, 192, dv=128,
                                  causal=True),
    "d64_dv128_f16": sdpa_graph("d64_dv128_f16", "f16", 2, 4, 2, 200, 150, 64, dv=128),
    "bias_d128_bf16": sdpa_graph("bias_d128_bf16", "bf16", 2, 8, 2, 300, 333, 128,
                                 bias=[1, 8, 300, 333]),
    "bias_f32_causal_f16": sdpa_graph("bias_f32_causal_f16", "f16", 2, 4, 2, 200, 150, 64,
                                      causal=True, bias=[2, 1, 1, 150], bias_type="f32"),
    "bias_d256_bf16": sdpa_graph("bias_d256_bf16", "bf16", 1, 8, 2, 100, 133, 256,
                                 bias=[1, 1, 100, 133], bias_type="f32"),
    "bottom_right_bf16": sdpa_graph("bottom_right_bf16", "bf16", 2, 8, 2, 300, 200, 64,
                                    bottom_right=True),
    "window_f16": sdpa_graph("window_f16", "f16", 2, 4, 2, 300, 333, 128, causal=True,
                             window=100),
    "decode_bf16": sdpa_graph("decode_bf16", "bf16", 4, 8, 1, 1, 4097, 128),
    "interleaved_f16": sdpa_graph("interleaved_f16", "f16", 2, 4, 2, 100, 120, 64, causal=True,
                                  interleaved=("q", "k", "v")),
    "o_f32_bf16": sdpa_graph("o_f32_bf16", "bf16", 1, 2, 2, 64, 80, 64, relu=True),
}
# name: (graph builder, what the sdpa kernel's reason starts with).
FALLBACKS = {
    "d264_bf16": (sdpa_graph("d264_bf16", "bf16", 1, 2, 2, 64, 80, 264),
                  "tc-sm80's attention kernel does not take it (sdpa: 64x80x264"),
    "d60_bf16": (sdpa_graph("d60_bf16", "bf16", 1, 1, 1, 64, 80, 60),
                 "tc-sm80 does not apply (head dim D = 60: expected a multiple of 8"),
    "bias_f16_bf16": (sdpa_graph("bias_f16_bf16", "bf16", 1, 2, 2, 64, 80, 64,
                                 bias=[1, 1, 64, 80], bias_type="f16"),
                      "tc-sm80 does not apply (a f16 bias with bf16 q, k, v: expected bf16 or "
                      "f32): simt-generic"),
    "f32": (sdpa_graph("f32", "f32", 1, 2, 2, 64, 80, 64),
            "no faster strategy planned (sdpa: 64x80x64"),
}
SASS_CASES = ("d64_bf16", "d64_causal_f16", "d128_bf16", "d128_causal_f16", "d256_bf16",
              "d256_causal_f16", "d192_dv128_bf16", "bias_d128_bf16", "bias_f32_causal_f16",
              "bias_d256_bf16", "window_f16", "bottom_right_bf16")


def graph_of(name):
    """The graph of a CASES or FALLBACKS name."""
    return (CASES[name] if name in CASES else FALLBACKS[name][0])()


@pytest.fixture(scope="module")
def built():
    """Each graph compiled and assembled at most once."""
    return Builds(graph_of, ARCH)


def sdpa_kernels(package):
    return [k for k in package.kernels if k["name"].endswith("_sdpa")
            and not k["reason"].startswith("created by dnn-io-strides")]


def sizes(name):
    inputs = {t.name: t for t in CASES[name]().inputs}
    b, h, sq, d = (int(x) for x in inputs["q"].dim)
    _, hk, skv, dv = (int(x) for x in inputs["v"].dim)
    return b, h, hk, sq, skv, d, dv, inputs


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_tc_sm80_kernel(built, name):
    package = built.package(name)
    (k,) = sdpa_kernels(package)
    assert k["strategy"] == "tc-sm80", (k["entry"], k["reason"])
    b, h, hk, sq, skv, d, dv, inputs = sizes(name)
    bias = inputs.get("bias")
    m, n = k["config"]["tile"]
    expected = tc_sm80_attention_tiles(sq, d, dv, bias is not None)[0]
    assert (m, n, k["config"]["stages"], k["block"][0]) == \
        (expected.m, expected.n, expected.stages, expected.threads)
    assert k["grid"] == [-(-sq // m), b * h, 1]
    assert k["shared_bytes"] == flash.smem_bytes(expected, d, dv) <= SM80_SHARED
    assert (f"attention forward: {m} query rows a block ({expected.warps} warps of "
            f"{expected.rows}), {n} kv rows a step, K and V through a cp.async ring of 2 "
            "stages") in k["reason"], k["reason"]


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_fallback_says_why(built, name):
    kernels = sdpa_kernels(built.package(name))
    assert kernels and all(k["strategy"] == "simt-generic" for k in kernels), \
        [(k["entry"], k["strategy"]) for k in kernels]
    for k in kernels:
        assert k["reason"].startswith(FALLBACKS[name][1]), k["reason"]


@pytest.mark.parametrize("config, tile, threads", [
    # The strategy alone: the tile the heuristics rank on sm_80.
    ("*=strategy:tc-sm80", [128, 32], 128),
    ("*=strategy:tc-sm80,tile:128x64,block:256", [128, 64], 256),
])
def test_override_on_sm90a_reaches_the_kernel(built, config, tile, threads):
    """On sm_90a a config override naming tc-sm80 runs this kernel, not
    tc-sm90's: HMMA, no HGMMA."""
    package = built.package("d128_bf16", "sm_90a", config)
    (k,) = sdpa_kernels(package)
    assert (k["strategy"], k["config"]["tile"], k["block"][0]) == ("tc-sm80", tile, threads), \
        k["reason"]
    assert "on mma.sync" in k["reason"]
    _, functions = built.assembly("d128_bf16", "sm_90a", config)
    counts = sass.opcodes(functions[k["entry"]])
    assert counts["HMMA.16816.F32.BF16"] > 0
    assert not [op for op in counts if op.startswith("HGMMA")]


# ----------------------------------------------------------------------------
# ptxas and the SASS


@needs_sass
@pytest.mark.parametrize("name", SASS_CASES)
def test_sass(built, name):
    """No spills, stack or local memory (dnn-register-budget gives the
    kernel a launch bound, ``.minnctapersm 1``, without which ptxas may
    hold it to 128 registers); shared memory within an sm_80 block's;
    HMMA.16816 of the input type, ldmatrix of K and Q (LDSM.16.M88) and of
    V transposed (LDSM.16.MT88), cp.async (LDGSTS), MUFU.EX2."""
    (k,) = sdpa_kernels(built.package(name))
    directives, _ = ptx_entries(built.package(name).ptx)[k["entry"]]
    assert directives == [".maxntid", f"{k['block'][0]},", "1,", "1", ".minnctapersm", "1"]
    resources, functions = built.assembly(name)
    assert_no_spills([k], resources)
    assert 0 < resources[k["entry"]].registers <= 255
    assert_shared_fit([k], resources, SM80_SHARED)
    assert_no_local_memory([k], functions)
    counts = sass.opcodes(functions[k["entry"]])
    suffix = ".BF16" if name.endswith("bf16") else ""
    assert family(counts, "HMMA.") == {f"HMMA.16816.F32{suffix}"}
    for op in ("LDSM.16.M88.4", "LDSM.16.MT88.4", "LDGSTS.E.BYPASS.128", "MUFU.EX2"):
        assert counts[op] > 0, (op, sorted(counts))


# ----------------------------------------------------------------------------
# Numerics on the CPU


def kernel_function(module):
    (fn,) = [f for f in irutil.kernel_functions(module) if irutil.symbol(f).endswith("_sdpa")]
    return fn


def interpret(build, arch=ARCH, config=None, seed=0):
    """(the expected outputs by name, what the sdpa kernel wrote: {"o":
    ..., "stats": ...}, its config) of ``build``'s one sdpa, its inputs
    drawn from ``seed`` as the GPU cases draw them."""
    from gpu_cases.case import Case
    from gpu_cases.inputs import make_inputs

    g = build()
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch=arch, tuning_db="off", stop_after="configured", config=config))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-tensor-cores") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    data = make_inputs(Case("interpreted", build, seed=seed), g)
    expected = g.execute_reference(data)
    with module.context:
        fn = kernel_function(module)
        config_text = str(fn.attributes["dnn.config"])
        info = ir.DictAttr(fn.attributes[attention_match.ATTR])
        operands = list(ir.DenseI64ArrayAttr(info["operands"]))
        results = list(ir.DenseI64ArrayAttr(info["results"]))
        arguments = list(irutil.body(fn).arguments)
        inputs = len(arguments) - ir.IntegerAttr(info["returned"]).value
        arrays = [None] * len(arguments)
        for name, i in zip(("q", "k", "v", "bias"), operands):
            if i >= 0:
                arrays[i] = np.asarray(data[name], np.float32)
        where = {}
        for name, i in zip(("o", "stats"), results):
            if i >= 0:
                shape = list(ir.MemRefType(arguments[inputs + i].type).shape)
                arrays[inputs + i] = np.full(shape, np.nan, np.float32)
                where[name] = inputs + i
        got = run_kernel(fn, arrays)
    return expected, {name: got[i] for name, i in where.items()}, config_text


# name: (graph builder, config override): masks, a bias, grouped heads,
# head dims, types, more than one kv step, Q in registers and read again,
# O staged and from registers.
NUMERICS = {
    "d64_bf16": (sdpa_graph("n_d64", "bf16", 1, 2, 1, 130, 200, 64), None),
    "d64_causal_bf16": (sdpa_graph("n_d64c", "bf16", 1, 2, 1, 130, 200, 64, causal=True), None),
    "bottom_right_f16": (sdpa_graph("n_br", "f16", 1, 2, 1, 200, 130, 64, bottom_right=True),
                         None),
    "window_f16": (sdpa_graph("n_win", "f16", 1, 2, 1, 200, 230, 64, causal=True, window=50),
                   None),
    "bottom_right_window_bf16": (sdpa_graph("n_brw", "bf16", 1, 2, 2, 129, 300, 96,
                                            bottom_right=True, window=33), None),
    "bias_d80_bf16": (sdpa_graph("n_bias", "bf16", 2, 2, 1, 70, 150, 80, bias=[2, 1, 1, 150]),
                      None),
    "bias_f32_causal_f16": (sdpa_graph("n_biasf", "f16", 1, 4, 2, 70, 90, 64, causal=True,
                                       bias=[1, 4, 70, 90], bias_type="f32"), None),
    "d128_causal_bf16": (sdpa_graph("n_d128", "bf16", 1, 2, 2, 140, 150, 128, causal=True),
                         None),
    "d96_dv64_f16": (sdpa_graph("n_d96", "f16", 1, 4, 1, 77, 100, 96, dv=64), None),
    "d64_dv128_f16": (sdpa_graph("n_dv128", "f16", 1, 2, 1, 77, 100, 64, dv=128), None),
    "d256_causal_bf16": (sdpa_graph("n_d256", "bf16", 1, 1, 1, 140, 100, 256, causal=True),
                         None),
    "d72_dv40_bf16": (sdpa_graph("n_d72", "bf16", 1, 1, 1, 33, 70, 72, dv=40), None),
    "no_stats_bf16": (sdpa_graph("n_nostats", "bf16", 1, 1, 1, 33, 70, 64, stats=False), None),
    "interleaved_f16": (sdpa_graph("n_inter", "f16", 2, 2, 1, 40, 70, 64,
                                   interleaved=("q", "k", "v")), None),
    # Two m16 fragments a warp, Q read from shared memory each step.
    "q_in_shared_bf16": (sdpa_graph("n_qsh", "bf16", 1, 2, 1, 150, 150, 128, causal=True),
                         "*=strategy:tc-sm80,tile:128x32,block:128"),
    # Three stages, 128 kv rows a step.
    "stages_3_f16": (sdpa_graph("n_st3", "f16", 1, 1, 1, 130, 600, 64),
                     "*=strategy:tc-sm80,tile:64x128,block:128,stages:3"),
}


@pytest.fixture(scope="module")
def gpu_cases():
    """test/gpu/gpu_cases (its inputs are drawn as the GPU cases draw them)."""
    return _load_gpu_cases()


@pytest.mark.parametrize("name", sorted(NUMERICS))
def test_numerics_on_the_cpu(gpu_cases, name):
    """o within the output type's tolerance (case.comparison: |got - ref| <=
    atol + rtol |ref|, atol = rtol max(1, max |ref|)) of the float64
    reference, the statistics within 1e-3 and -inf exactly where a row sees
    no key."""
    from gpu_cases.case import RTOL

    build, config = NUMERICS[name]
    expected, got, config_text = interpret(build, config=config)
    assert 'strategy = "tc-sm80"' in config_text, config_text
    names = [t.name for t in build().outputs]
    reference = np.asarray(expected[names[0]], np.float64)
    rtol = RTOL[name.rsplit("_", 1)[1]]
    atol = rtol * max(1.0, float(np.abs(reference).max()))
    assert np.allclose(got["o"], reference, rtol=rtol, atol=atol), \
        float(np.nanmax(np.abs(got["o"] - reference)))
    if "stats" in got:
        stats = np.asarray(expected[names[1]], np.float64)
        assert np.array_equal(np.isneginf(got["stats"]), np.isneginf(stats))
        finite = np.isfinite(stats)
        assert np.allclose(got["stats"][finite], stats[finite], rtol=0, atol=1e-3)
    if name.startswith("bottom_right_f16"):
        assert np.isneginf(got["stats"]).any()   # rows that see no key


def test_numerics_of_an_f32_o(gpu_cases):
    """o kept in f32 (a relu follows it in a bf16 graph): written from
    registers, the relu of it the graph's output."""
    from gpu_cases.case import RTOL

    build = sdpa_graph("n_of32", "bf16", 1, 1, 1, 33, 70, 64, relu=True)
    expected, got, _ = interpret(build)
    reference = np.asarray(expected[build().outputs[0].name], np.float64)
    o = np.maximum(got["o"], 0)
    assert np.allclose(o, reference, rtol=RTOL["bf16"], atol=RTOL["bf16"])


# ----------------------------------------------------------------------------
# The GPU family attention_sm80


def test_sm80_family_draws(gpu_cases):
    """test/gpu/gpu_cases/attention_sm80.py covers what it says: every head
    dim of HEAD_DIMS (and a Dv != D), every length of SIZES as Sq and as
    Skv, the groups 1, 2 and 8, each mask (none, causal top-left and
    bottom-right, windows at either diagonal), biases of q's type and f32,
    q, k and v stored (B, S, H, D), bf16 and f16; every case forced onto
    tc-sm80."""
    family = gpu_cases.attention_sm80
    configs = [a for graph in family.CONFIGS for a in graph]
    assert len(configs) == 40
    assert {a.d for a in configs} == set(family.HEAD_DIMS) and any(a.d != a.dv for a in configs)
    assert {a.sq for a in configs} == {a.skv for a in configs} == set(family.SIZES)
    assert {a.heads // a.kv_heads for a in configs} == set(family.GROUPS)
    assert {(a.causal, a.bottom_right, a.window > 0) for a in configs} == {
        (False, False, False), (True, False, False), (True, True, False), (True, False, True),
        (True, True, True)}
    assert {a.bias_type for a in configs if a.bias} == {None, "f32"}
    assert any(a.interleaved for a in configs) and any(not a.stats for a in configs)
    assert all(a.stored_bytes() <= family.BUDGET for a in configs)
    assert {c.name.rsplit("_", 1)[1] for c in family.CASES} == {"bf16", "f16"}
    assert all(c.config == "*=strategy:tc-sm80" for c in family.CASES)


@pytest.mark.parametrize("arch", [ARCH, "sm_90a"])
def test_sm80_family_runs_tc_sm80(gpu_cases, arch):
    """A graph of the family (a bias, a causal mask, strided q, k, v, Dv !=
    D, grouped heads) compiles to
    one tc-sm80 kernel a configuration for sm_80 and for sm_90a alike."""
    case = gpu_cases.attention_sm80.CASES[6]
    package = compiler.compile_module(graph_mlir.to_module(case.build()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off", config=case.config), basename="main")
    kernels = sdpa_kernels(package)
    assert len(kernels) == 5 and {k["strategy"] for k in kernels} == {"tc-sm80"}, \
        [k["reason"] for k in kernels]
