"""tc-sm80's attention backward without a GPU
(dnnc/codegen/gpu/tensorcore/sm80/flash_backward.py): what the heuristics
rank on sm_80, what the kernels refuse and why, the plans (two tc-sm80
kernels: dQ then dK dV), the override on sm_90a, what ptxas makes of them,
and what they compute, run on the CPU by test/python/kernel_interpreter.py
against the NumPy reference. The plans here are the two kernels'
(``TWO_KERNELS``: the config's fused = 0, which the sm_80 heuristics rank
first; test_attention_sm80_backward_fused.py tests the fused kernel).

* Heuristics (``tc_sm80_attention_backward``): on sm_80 an sdpa_backward
  of bf16 or f16 with head dims up to 128 ranks the two kernels (128 rows
  a block over 8 warps, 64 kv rows a dQ step, 64 or 32 query rows a dK dV
  step) first (the fused kernel second where it applies), then simt-generic; above
  128 simt-generic says why.
* ``check`` refuses with the reason: f32, head dims no multiple of 8 or
  over 128, a bias of the other 16-bit type, ragged rows, a tile whose
  accumulators exceed a thread's registers.
* ptxas and the SASS: no spills, stack or local memory; HMMA.16816 of the
  input type, ldmatrix plain and transposed, cp.async.
* Numerics: the kernels' IR interpreted on the CPU (dQ, dK and dV against
  the float64 reference of the same inputs, o and the statistics the
  reference forward's): masks, GQA, a bias, padding lengths, Sq and Skv no
  multiple of a tile, D != Dv.
"""

import dataclasses

import numpy as np
import pytest
from mlir import ir

import dnnc
from dnnc import compiler, graph_mlir, passes, pipelines
from dnnc.codegen.gpu import irutil, sass
from dnnc.codegen.gpu.tensorcore import attention as attention_match
from dnnc.codegen.gpu.tensorcore.sm80 import NotSupported, flash_backward
from dnnc.heuristics import rank
from dnnc.heuristics.contraction import TC80_SHARED, tc_sm80_attention_backward_tile
from kernel_builds import (Builds, assert_no_local_memory, assert_no_spills, assert_shared_fit,
                           family)
from kernel_interpreter import run_kernel
from test_attention_tensor_cores import BiasValue, backward_graph, backward_problem
from test_cuda_compile import _load_gpu_cases
from test_tc_sass import needs_sass

ARCH = "sm_80"
SM80_SHARED = TC80_SHARED["sm_80"]
# The override that names the two kernels (sm_80's heuristics rank them
# first too).
TWO_KERNELS = "*=fused:0"


def attention(d, dv, element="bf16", scale=0.125, bias=None, **extra):
    """An AttentionBackward as the matcher would return it, buffers left
    out."""
    return attention_match.AttentionBackward(
        None, None, None, None, None, bias and BiasValue(bias), 2, 8, 2, 1000, 1000, d, dv,
        scale, False, element, **extra)


# ----------------------------------------------------------------------------
# Heuristics


@pytest.mark.parametrize("d, dv, dkv_m", [(64, 64, 64), (32, 64, 64), (80, 80, 32),
                                          (128, 128, 32), (64, 128, 32),
                                          (8, 8, 64)])
def test_heuristics_rank_tc_sm80(d, dv, dkv_m):
    configs = rank(backward_problem(1024, 1000, d, dv, arch=ARCH))
    fused = d == dv and d in (64, 128)
    assert [c.fused for c in configs[:2] if c.strategy == "tc-sm80"] == \
        ([0, 1] if fused else [0]), [(c.strategy, c.fused) for c in configs]
    two = configs[0]
    assert (two.strategy, two.tile, two.stages, two.block) == \
        ("tc-sm80", (64, dkv_m), 2, (256, 1, 1)), [(c.strategy, c.tile) for c in configs]
    assert {c.strategy for c in configs[2 if fused else 1:]} == {"simt-generic"}
    assert two.reason.startswith(
        f"attention backward (sdpa_backward: 1024x1000x{d} (S x Skv x D) x16 batch bf16): a "
        f"dQ kernel (128 query rows a block, 64 kv rows a step) and a dK dV kernel (128 kv "
        f"rows a block, {dkv_m} query rows a step) on mma.sync"), two.reason
    assert "no atomics (deterministic)" in two.reason


def test_heuristics_keep_wide_heads_on_simt_generic():
    configs = rank(backward_problem(100, 100, 192, 128, arch=ARCH))
    assert {c.strategy for c in configs} == {"simt-generic"}
    assert configs[0].reason.startswith(
        "tc-sm80's attention backward does not take it (sdpa_backward: 100x100x192"), \
        configs[0].reason
    assert "head dims up to 128" in configs[0].reason


@pytest.mark.parametrize("biased", [False, True])
def test_every_head_dim_has_a_tile(biased):
    """Every D and Dv that are multiples of 8 up to 128 get a tile that the
    kernels' check takes within an sm_80 block's shared memory."""
    with ir.Context():
        for d in range(8, 129, 8):
            for dv in range(8, 129, 8):
                tile = tc_sm80_attention_backward_tile(d, dv, biased)
                assert tile is not None, (d, dv)
                assert flash_backward.fits(tile, d, dv, biased, SM80_SHARED) is None
                flash_backward.check(attention(d, dv, bias="f32" if biased else None), tile)


# ----------------------------------------------------------------------------
# check


@pytest.mark.parametrize("att, tile, why", [
    (attention(64, 64, "f32"), flash_backward.BackwardTile(),
     "f32 q, k, v (tc-sm80's attention backward takes bf16 and f16)"),
    (attention(60, 64), flash_backward.BackwardTile(),
     "head dim D = 60: tc-sm80's attention backward takes multiples of 8 up to 128"),
    (attention(64, 136), flash_backward.BackwardTile(), "head dim Dv = 136"),
    (attention(64, 64, bias="f16"), flash_backward.BackwardTile(),
     "a f16 bias with bf16 q, k, v: expected bf16 or f32"),
    (attention(64, 64, scale=-1.0), flash_backward.BackwardTile(), "expected a positive scale"),
    (attention(128, 128), flash_backward.BackwardTile(8, 64, 128),
     "D 128, Dv 128: the dK dV kernel holds"),
    (attention(64, 64), flash_backward.BackwardTile(2, 64, 64), "expected 4 or 8 warps"),
    (attention(64, 64, ragged={"q": None}), flash_backward.BackwardTile(),
     "the attention's ragged: not implemented in tc-sm80's attention backward"),
])
def test_check_says_why(att, tile, why):
    with ir.Context(), pytest.raises(NotSupported) as err:
        flash_backward.check(att, tile)
    assert why in str(err.value), str(err.value)


# ----------------------------------------------------------------------------
# Plans and the SASS


CASES = {
    "d64_bf16": backward_graph("d64_bf16", "bf16", 2, 8, 2, 300, 333, 64),
    "d64_causal_f16": backward_graph("d64_causal_f16", "f16", 2, 8, 2, 300, 333, 64,
                                     causal=True),
    "d128_bf16": backward_graph("d128_bf16", "bf16", 2, 8, 2, 300, 333, 128),
    "d128_causal_f16": backward_graph("d128_causal_f16", "f16", 1, 4, 4, 300, 333, 128,
                                      causal=True),
    "d80_window_bf16": backward_graph("d80_window_bf16", "bf16", 1, 4, 2, 200, 150, 80,
                                      causal=True, window=40),
    "bias_d128_bf16": backward_graph("bias_d128_bf16", "bf16", 1, 4, 2, 200, 150, 128,
                                     bias=[1, 4, 200, 150], bias_type="f32"),
    "padding_d64_f16": backward_graph("padding_d64_f16", "f16", 2, 4, 2, 200, 150, 64,
                                      bottom_right=True, padding=True),
}
SASS_CASES = ("d64_bf16", "d64_causal_f16", "d128_bf16", "d128_causal_f16", "bias_d128_bf16",
              "d80_window_bf16", "padding_d64_f16")


@pytest.fixture(scope="module")
def built():
    """Each graph compiled and assembled at most once."""
    return Builds(lambda name: CASES[name](), ARCH,
                  config=lambda name, override: override or TWO_KERNELS)


def backward_kernels(package):
    return [k for k in package.kernels if k["name"].endswith("_sdpa_backward")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_two_tc_sm80_kernels(built, name):
    """One kernel function, two launches: dQ over (query tiles, B x H),
    then dK dV over (kv tiles, B x Hkv)."""
    kernels = backward_kernels(built.package(name))
    assert len(kernels) == 2 and {k["strategy"] for k in kernels} == {"tc-sm80"}, \
        [(k["entry"], k["reason"]) for k in kernels]
    inputs = {t.name: t for t in CASES[name]().inputs}
    b, h, sq, d = (int(x) for x in inputs["q"].dim)
    _, hk, skv, dv = (int(x) for x in inputs["v"].dim)
    dq, dkv = kernels
    assert dq["grid"] == [-(-sq // 128), b * h, 1] and dkv["grid"] == [-(-skv // 128), b * hk, 1]
    assert dq["block"] == dkv["block"] == [256, 1, 1]
    tile = tc_sm80_attention_backward_tile(d, dv, "bias" in inputs)
    assert [dq["shared_bytes"], dkv["shared_bytes"]] == \
        list(flash_backward.smem_bytes(tile, d, dv))
    assert "attention backward on mma.sync: a dQ kernel" in dq["reason"], dq["reason"]


def test_override_on_sm90a_reaches_the_kernels(built):
    """On sm_90a a config override naming tc-sm80 runs these kernels, not
    tc-sm90's: HMMA, no HGMMA."""
    config = "*=strategy:tc-sm80"
    kernels = backward_kernels(built.package("d128_bf16", "sm_90a", config))
    assert {k["strategy"] for k in kernels} == {"tc-sm80"}, [k["reason"] for k in kernels]
    _, functions = built.assembly("d128_bf16", "sm_90a", config)
    for k in kernels:
        counts = sass.opcodes(functions[k["entry"]])
        assert counts["HMMA.16816.F32.BF16"] > 0
        assert not [op for op in counts if op.startswith("HGMMA")]


def test_override_stages_without_a_tile(built):
    """An override naming the stages but no tile runs the heuristics' tile
    in those stages; one naming a block but no tile keeps the tile's warps
    and its plan says so."""
    staged = backward_kernels(built.package("d128_bf16", "sm_90a",
                                            "*=strategy:tc-sm80,fused:0,stages:3"))
    assert {k["config"]["stages"] for k in staged} == {3}, [k["config"] for k in staged]
    blocked = backward_kernels(built.package("d128_bf16", "sm_90a",
                                             "*=strategy:tc-sm80,fused:0,block:128"))
    for k in blocked:
        assert k["block"] == [256, 1, 1]
        assert "256 threads a block, the tile's, not the config's 128: an override sets the " \
               "warps by naming a tile" in k["reason"], k["reason"]


@needs_sass
@pytest.mark.parametrize("name", SASS_CASES)
def test_sass(built, name):
    """No spills, stack or local memory; HMMA.16816 of the input type,
    ldmatrix plain (Q, K, dO, V as A and B) and transposed (K, Q, dO as B
    of the accumulating products), cp.async."""
    resources, functions = built.assembly(name)
    kernels = backward_kernels(built.package(name))
    assert_no_spills(kernels, resources)
    assert_shared_fit(kernels, resources, SM80_SHARED)
    assert_no_local_memory(kernels, functions)
    for k in kernels:
        assert 0 < resources[k["entry"]].registers <= 255
        counts = sass.opcodes(functions[k["entry"]])
        suffix = ".BF16" if name.endswith("bf16") else ""
        assert family(counts, "HMMA.") == {f"HMMA.16816.F32{suffix}"}
        for op in ("LDSM.16.M88.4", "LDSM.16.MT88.4", "LDGSTS.E.BYPASS.128", "MUFU.EX2"):
            assert counts[op] > 0, (op, sorted(counts))


# ----------------------------------------------------------------------------
# Numerics on the CPU


@dataclasses.dataclass(frozen=True)
class Problem:
    """One sdpa_backward to interpret."""

    dtype: str
    b: int
    h: int
    hk: int
    sq: int
    skv: int
    d: int
    dv: int = None
    causal: bool = False
    bottom_right: bool = False
    window: int = None
    bias: tuple = None
    bias_type: str = None
    padding: tuple = None     # (seq_len_q, seq_len_kv) per batch entry
    interleaved: tuple = ()   # tensors stored (B, S, H, D)
    types: tuple = ()         # (tensor, type) of those not of dtype

    def graph(self):
        return backward_graph("n", self.dtype, self.b, self.h, self.hk, self.sq, self.skv,
                              self.d, self.dv, causal=self.causal,
                              bottom_right=self.bottom_right, window=self.window,
                              bias=list(self.bias) if self.bias else None,
                              bias_type=self.bias_type, padding=self.padding is not None,
                              interleaved=self.interleaved, types=dict(self.types))()


def forward_of(p, values):
    """o and the statistics of the reference forward on ``values``."""
    g = dnnc.Graph(io_data_type=p.dtype)
    dims = {"q": [p.b, p.h, p.sq, p.d], "k": [p.b, p.hk, p.skv, p.d],
            "v": [p.b, p.hk, p.skv, p.dv or p.d]}
    t = {x: g.tensor(name=x, dim=dims[x]) for x in "qkv"}
    extra = {}
    if p.bias:
        extra["bias"] = g.tensor(name="bias", dim=list(p.bias), data_type=p.bias_type)
    if p.padding:
        extra.update(use_padding_mask=True, **{
            x: g.tensor(name=x, dim=[p.b, 1, 1, 1], data_type="int32")
            for x in ("seq_len_q", "seq_len_kv")})
    o, stats = g.sdpa(t["q"], t["k"], t["v"], generate_stats=True,
                      use_causal_mask=p.causal, use_causal_mask_bottom_right=p.bottom_right,
                      sliding_window_length=p.window, **extra)
    o.set_name("o").set_output(True)
    stats.set_name("stats").set_output(True)
    names = [x.name for x in g.inputs]
    out = g.execute_reference({x: values[x] for x in names})
    return out["o"], out["stats"]


def interpret(p, seed=0, arch=ARCH, config=None):
    """(the reference's dq, dk, dv, what the kernels wrote, the config);
    ``config`` an override, TWO_KERNELS without one."""
    g = p.graph()
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch=arch, tuning_db="off", stop_after="configured",
        config=config or TWO_KERNELS))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-tensor-cores") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    rng = np.random.default_rng(seed)
    types = {t.name: t.get_data_type() for t in g.inputs}
    values = {}
    for name, t in types.items():
        if name in ("o", "stats"):
            continue
        dims = next(x.dim for x in g.inputs if x.name == name)
        if name == "seq_len_q":
            x = np.asarray(p.padding[0], np.float64).reshape(dims)
        elif name == "seq_len_kv":
            x = np.asarray(p.padding[1], np.float64).reshape(dims)
        else:
            x = rng.standard_normal(dims)
        values[name] = x.astype(np.float32).astype(t.numpy)
    o, stats = forward_of(p, values)
    values["o"] = np.asarray(o, np.float64).astype(np.float32).astype(types["o"].numpy)
    values["stats"] = np.asarray(stats, np.float32)
    expected = g.execute_reference(values)
    with module.context:
        (fn,) = [f for f in irutil.kernel_functions(module)
                 if irutil.symbol(f).endswith("_sdpa_backward")]
        config_text = str(fn.attributes["dnn.config"])
        info = ir.DictAttr(fn.attributes[attention_match.ATTR])
        operand_names, result_names = attention_match.roles("sdpa_backward")
        operands = dict(zip(operand_names, ir.DenseI64ArrayAttr(info["operands"])))
        results = dict(zip(result_names, ir.DenseI64ArrayAttr(info["results"])))
        arguments = list(irutil.body(fn).arguments)
        inputs = len(arguments) - ir.IntegerAttr(info["returned"]).value
        arrays = [None] * len(arguments)
        for name, i in operands.items():
            if i >= 0:
                x = values[name]
                arrays[i] = x if x.dtype.kind == "i" else np.asarray(x, np.float32)
        where = {}
        for name, i in results.items():
            if i >= 0:
                shape = list(ir.MemRefType(arguments[inputs + i].type).shape)
                arrays[inputs + i] = np.full(shape, np.nan, np.float32)
                where[name] = inputs + i
        got = run_kernel(fn, arrays)
    return expected, {name: got[i] for name, i in where.items()}, config_text


NUMERICS = {
    "d64_bf16": Problem("bf16", 1, 2, 1, 130, 200, 64),
    "d64_causal_gqa_bf16": Problem("bf16", 1, 4, 2, 150, 140, 64, causal=True),
    "bottom_right_window_f16": Problem("f16", 1, 2, 1, 200, 130, 64, bottom_right=True,
                                       window=40),
    "d80_dv48_f16": Problem("f16", 1, 2, 2, 77, 100, 80, dv=48),
    "d128_causal_bf16": Problem("bf16", 1, 2, 1, 140, 150, 128, causal=True),
    "bias_f32_d72_bf16": Problem("bf16", 2, 2, 1, 70, 90, 72, bias=(2, 1, 70, 90),
                                 bias_type="f32"),
    "padding_f16": Problem("f16", 2, 2, 1, 140, 150, 64, bottom_right=True,
                           padding=((100, 140), (150, 33))),
}


@pytest.fixture(scope="module")
def gpu_cases():
    """test/gpu/gpu_cases (for its tolerances)."""
    return _load_gpu_cases()


@pytest.mark.parametrize("name", sorted(NUMERICS))
def test_numerics_on_the_cpu(gpu_cases, name):
    """dq, dk and dv within the output type's tolerance (|got - ref| <= atol
    + rtol |ref|, atol = rtol max(1, max |ref|)) of the float64
    reference; every output element written (no NaN left)."""
    from gpu_cases.case import RTOL

    p = NUMERICS[name]
    expected, got, config_text = interpret(p)
    assert 'strategy = "tc-sm80"' in config_text, config_text
    rtol = RTOL[p.dtype]
    for x in ("dq", "dk", "dv"):
        reference = np.asarray(expected[x], np.float64)
        assert not np.isnan(got[x]).any(), x
        atol = rtol * max(1.0, float(np.abs(reference).max()))
        assert np.allclose(got[x], reference, rtol=rtol, atol=atol), \
            (x, float(np.max(np.abs(got[x] - reference))), atol)


def test_numerics_of_strided_and_f32_tensors(gpu_cases):
    """q, k, do, dq and dv stored (B, S, H, D), o and dk in f32 (read and
    written from registers)."""
    from gpu_cases.case import RTOL

    p = Problem("bf16", 1, 2, 1, 70, 90, 64, causal=True,
                interleaved=("q", "k", "do", "dq", "dv"), types=(("o", "f32"), ("dk", "f32")))
    expected, got, _ = interpret(p)
    for x in ("dq", "dk", "dv"):
        reference = np.asarray(expected[x], np.float64)
        atol = RTOL["bf16"] * max(1.0, float(np.abs(reference).max()))
        assert np.allclose(got[x], reference, rtol=RTOL["bf16"], atol=atol), x


# ----------------------------------------------------------------------------
# The GPU family attention_backward_sm80


def test_sm80_backward_family(gpu_cases):
    """test/gpu/gpu_cases/attention_backward_sm80.py covers what it says:
    head dims 64, 80 and 128 (and Dv != D), Sq and Skv no multiple of a
    tile, groups, every mask, a bias, layouts, padding; every case forced
    onto tc-sm80, bf16 and f16."""
    family = gpu_cases.attention_backward_sm80
    problems = [a for _, graph in family.PROBLEMS for a in graph]
    assert {a.d for a in problems} == {64, 80, 128} and any(a.d != a.dv for a in problems)
    assert any(a.sq % 64 for a in problems) and any(a.skv % 64 for a in problems)
    assert {a.heads // a.kv_heads for a in problems} >= {1, 2, 4, 8}
    assert {(a.causal, a.bottom_right, a.window > 0) for a in problems} >= {
        (False, False, False), (True, False, False), (True, True, False), (True, False, True),
        (True, True, True)}
    assert any(a.bias for a in problems) and any(a.interleaved for a in problems)
    padded = [a for _, graph in family.PADDED for a in graph]
    assert {a.mask for a in padded} == {"none", "causal", "bottom_right", "window"}
    assert all(c.config == "*=strategy:tc-sm80,fused:0" for c in family.CASES)
    assert {c.name.rsplit("_", 1)[1] for c in family.CASES} == {"bf16", "f16"}


@pytest.mark.parametrize("arch", [ARCH, "sm_90a"])
def test_sm80_backward_family_runs_tc_sm80(gpu_cases, arch):
    """A graph of the family compiles to tc-sm80 backward kernels for
    sm_80 and sm_90a alike (two launches a kernel function)."""
    case = next(c for c in gpu_cases.attention_backward_sm80.CASES if "masks" in c.name)
    package = compiler.compile_module(graph_mlir.to_module(case.build()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off", config=case.config), basename="main")
    kernels = backward_kernels(package)
    assert len(kernels) == 6 and {k["strategy"] for k in kernels} == {"tc-sm80"}, \
        [k["reason"] for k in kernels]


def test_numerics_of_an_override_tile(gpu_cases):
    """A config naming the tile: 4 warps (64 rows a block), 32 kv rows a
    dQ step, 32 query rows a dK dV step, 3 stages; recorded in the config
    and computed as the reference does."""
    from gpu_cases.case import RTOL

    p = Problem("f16", 1, 4, 2, 100, 150, 64, causal=True, bias=(1, 1, 100, 150),
                bias_type="f32")
    expected, got, config_text = interpret(
        p, config="*=strategy:tc-sm80,tile:32x32,block:128,stages:3")
    assert "block = [128, 1, 1], stages = 3 : i64, strategy = \"tc-sm80\", tile = [32, 32]" \
        in config_text, config_text
    for x in ("dq", "dk", "dv"):
        reference = np.asarray(expected[x], np.float64)
        atol = RTOL["f16"] * max(1.0, float(np.abs(reference).max()))
        assert np.allclose(got[x], reference, rtol=RTOL["f16"], atol=atol), x
