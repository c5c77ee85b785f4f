"""tc-sm80's fused attention backward without a GPU
(dnnc/codegen/gpu/tensorcore/sm80/flash_backward_fused.py): what the sm_80
heuristics rank and why, what the kernel refuses, the plans (the
preprocess, the fused kernel, the conversion), the override both ways,
what ptxas makes of it, and what it computes, run on the CPU by
test/python/kernel_interpreter.py (its ``red.global.add.f32`` included)
against the NumPy reference.

* Heuristics: D = Dv in (64, 128), no bias, not deterministic: the two
  kernels first (the fused kernel measured slower on an H200), the fused
  kernel (``fused = 1``) second; otherwise the two kernels alone, their
  reason saying why not the fused kernel.
* ``refusal``: dbias, a step's query rows that do not divide the warps, D
  not in whole n8 tiles a warp; such a config falls back to the two kernels
  with a note.
* ptxas and the SASS (sm_80 and sm_90a): no spills, stack or local memory;
  RED (sm_80) / REDG (sm_90a) ADD.F32, HMMA of the input type, ldmatrix
  plain and transposed.
* Numerics: dq, dk and dv of masks, GQA, Sq and Skv no multiple of a tile,
  D 64 and 128, Dv != D, padding lengths, a bias (asked for by the
  override), f16 and bf16.
"""

import dataclasses

import numpy as np
import pytest
from mlir import ir

from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import sass
from dnnc.codegen.gpu.tensorcore.sm80 import NotSupported, flash_backward, flash_backward_fused
from dnnc.heuristics import rank
from dnnc.heuristics.contraction import TC80_SHARED, tc_sm80_attention_backward_tile
from dnnc.heuristics.problem import TensorSpec
from kernel_builds import Builds, assert_no_local_memory, assert_no_spills, assert_shared_fit
from test_attention_sm80_backward import Problem, attention, backward_kernels, interpret
from test_attention_tensor_cores import backward_graph, backward_problem
from test_cuda_compile import _load_gpu_cases
from test_tc_sass import needs_sass

ARCH = "sm_80"
FUSED = "*=fused:1"
ON_SM90 = "*=strategy:tc-sm80,fused:1"

# ----------------------------------------------------------------------------
# Heuristics


@pytest.mark.parametrize("d, dkv_m", [(64, 64), (128, 32)])
def test_heuristics_rank_the_fused_kernel_second(d, dkv_m):
    # The two kernels first: the fused one measured slower on an H200.
    configs = rank(backward_problem(1024, 1000, d, d, arch=ARCH))
    two, fused = configs[:2]
    assert "before the fused kernel (fused:1), which took 6-13% longer" in two.reason
    assert (fused.strategy, fused.fused, fused.tile, fused.block) == \
        ("tc-sm80", 1, (64, dkv_m), (256, 1, 1)), fused
    assert (two.strategy, two.fused, two.tile) == ("tc-sm80", 0, (64, dkv_m)), two
    assert f"one fused kernel on mma.sync (128 kv rows a block, {dkv_m} query rows a step" \
        in fused.reason, fused.reason
    assert "red.global.add (not deterministic" in fused.reason


def _deterministic(problem):
    return dataclasses.replace(problem, anchor_attrs=(("deterministic", True),))


def _biased(problem):
    ins = problem.anchor_inputs + (TensorSpec((1, 1, 1024, 1000), "f32"),)
    return dataclasses.replace(problem, inputs=ins, anchor_inputs=ins)


@pytest.mark.parametrize("problem, why", [
    (_deterministic(backward_problem(1024, 1000, 64, 64, arch=ARCH)),
     "not the fused kernel: the graph asks for a deterministic backward"),
    (_biased(backward_problem(1024, 1000, 64, 64, arch=ARCH)),
     "not the fused kernel: a bias"),
    (backward_problem(1024, 1000, 80, 80, arch=ARCH), "not the fused kernel: D 80, Dv 80"),
    (backward_problem(1024, 1000, 64, 40, arch=ARCH), "not the fused kernel: D 64, Dv 40"),
])
def test_heuristics_keep_the_two_kernels(problem, why):
    configs = rank(problem)
    assert [c.fused for c in configs if c.strategy == "tc-sm80"] == [0]
    assert why in configs[0].reason, configs[0].reason


# ----------------------------------------------------------------------------
# What the kernel takes


@pytest.mark.parametrize("att, tile, why", [
    (attention(64, 64, dbias=object()), flash_backward.BackwardTile(),
     "tc-sm80's fused attention backward: the bias's gradient"),
    (attention(80, 80), flash_backward.BackwardTile(8, 64, 32),
     "D 80 over 4 warps' columns a step: expected a multiple of 32"),
])
def test_check_says_why(att, tile, why):
    with ir.Context(), pytest.raises(NotSupported) as err:
        flash_backward_fused.check(att, tile)
    assert why in str(err.value), str(err.value)


def test_refusal_of_rows_that_do_not_divide_the_warps():
    """128 query rows a step are 8 warps' rows of dQ_i: 4 warps cannot
    hold them (the two kernels' register check refuses that tile too)."""
    assert "128 query rows a step over 4 warps of 16 rows" in \
        flash_backward_fused.refusal(flash_backward.BackwardTile(4, 64, 128), 64, 64)


def test_shared_memory_fits_sm80():
    """The tiles the heuristics give D = Dv 64 and 128 fit sm_80's shared
    memory with the dSᵀ tile."""
    for d in (64, 128):
        tile = tc_sm80_attention_backward_tile(d, d, False)
        assert flash_backward_fused.refusal(tile, d, d, shared=TC80_SHARED["sm_80"]) is None
        assert flash_backward_fused.fused_smem_bytes(tile, d, d) == \
            flash_backward.smem_bytes(tile, d, d)[1] + 128 * (2 * tile.dkv_m + 16)


# ----------------------------------------------------------------------------
# Plans and the SASS


CASES = {
    "d64_bf16": backward_graph("d64_bf16", "bf16", 2, 8, 2, 300, 333, 64),
    "d64_causal_f16": backward_graph("d64_causal_f16", "f16", 2, 8, 2, 300, 333, 64,
                                     causal=True),
    "d128_bf16": backward_graph("d128_bf16", "bf16", 2, 8, 2, 300, 333, 128),
    "d128_causal_f16": backward_graph("d128_causal_f16", "f16", 1, 4, 4, 300, 333, 128,
                                      causal=True),
    "bias_d128_bf16": backward_graph("bias_d128_bf16", "bf16", 1, 4, 2, 200, 150, 128,
                                     bias=[1, 4, 200, 150], bias_type="f32"),
    "dbias_d64_bf16": backward_graph("dbias_d64_bf16", "bf16", 1, 4, 4, 200, 150, 64,
                                     bias=[1, 4, 200, 150], dbias=True),
}


@pytest.fixture(scope="module")
def built():
    return Builds(lambda name: CASES[name](), ARCH)


@pytest.mark.parametrize("name, config", [("d64_bf16", FUSED), ("d128_causal_f16", FUSED),
                                          ("d64_bf16", ON_SM90), ("bias_d128_bf16", FUSED)])
def test_three_launches(built, name, config):
    """The fused kernel, asked for on sm_80 (and on sm_90a): the
    preprocess over (query row blocks, B x H), the fused kernel over (kv
    tiles, B x Hkv), the conversion."""
    arch = "sm_90a" if config == ON_SM90 else ARCH
    kernels = backward_kernels(built.package(name, arch, config))
    assert len(kernels) == 3 and {k["strategy"] for k in kernels} == {"tc-sm80"}, \
        [(k["entry"], k["reason"]) for k in kernels]
    inputs = {t.name: t for t in CASES[name]().inputs}
    b, h, sq, d = (int(x) for x in inputs["q"].dim)
    _, hk, skv, dv = (int(x) for x in inputs["v"].dim)
    pre, fused, convert = kernels
    assert pre["grid"][1] == convert["grid"][1] == b * h
    assert fused["grid"] == [-(-skv // 128), b * hk, 1] and fused["block"] == [256, 1, 1]
    tile = tc_sm80_attention_backward_tile(d, dv, "bias" in inputs)
    assert fused["shared_bytes"] == flash_backward_fused.fused_smem_bytes(tile, d, dv)
    assert "fused: delta = rowsum(dO o O) and a zeroed f32 dQ workspace first" in \
        fused["reason"], fused["reason"]


@pytest.mark.parametrize("name, arch, config", [("d64_bf16", ARCH, "*=fused:0"),
                                                ("d64_bf16", "sm_90a", "*=strategy:tc-sm80")])
def test_two_kernels_by_override(built, name, arch, config):
    kernels = backward_kernels(built.package(name, arch, config))
    assert len(kernels) == 2, [k["reason"] for k in kernels]
    assert "a dQ kernel" in kernels[0]["reason"]


def test_dbias_falls_back_to_the_two_kernels(built):
    kernels = backward_kernels(built.package("dbias_d64_bf16", ARCH, FUSED))
    fn_reason = kernels[0]["reason"]
    assert "the fused backward does not apply (tc-sm80's fused attention backward: the " \
           "bias's gradient" in fn_reason, fn_reason
    assert "a dQ kernel" in fn_reason


@needs_sass
@pytest.mark.parametrize("name", ["d64_bf16", "d64_causal_f16", "d128_bf16", "d128_causal_f16",
                                  "bias_d128_bf16"])
@pytest.mark.parametrize("arch", [ARCH, "sm_90a"])
def test_sass(built, name, arch):
    """No spills, stack or local memory; the reductions, HMMA.16816 of the
    input type, ldmatrix plain and transposed, cp.async."""
    config = FUSED if arch == ARCH else ON_SM90
    resources, functions = built.assembly(name, arch, config)
    kernels = backward_kernels(built.package(name, arch, config))
    assert_no_spills(kernels, resources)
    assert_shared_fit(kernels, resources, TC80_SHARED["sm_80"])
    assert_no_local_memory(kernels, functions)
    counts = sass.opcodes(functions[kernels[1]["entry"]])
    red = "RED.E.ADD.F32.FTZ.RN.STRONG.GPU" if arch == ARCH else \
        "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU"
    assert counts[red] == 16, sorted(op for op in counts if "RED" in op or "ATOM" in op)
    suffix = ".BF16" if name.endswith("bf16") else ""
    for op in (f"HMMA.16816.F32{suffix}", "LDSM.16.M88.4", "LDSM.16.MT88.4",
               "LDGSTS.E.BYPASS.128"):
        assert counts[op] > 0, (op, sorted(counts))


# ----------------------------------------------------------------------------
# Numerics on the CPU


NUMERICS = {
    "d64_bf16": Problem("bf16", 1, 2, 1, 130, 200, 64),
    "d64_causal_gqa_bf16": Problem("bf16", 1, 4, 2, 150, 140, 64, causal=True),
    "d64_dv40_f16": Problem("f16", 2, 2, 1, 77, 129, 64, dv=40),
    "bottom_right_window_f16": Problem("f16", 1, 2, 1, 200, 130, 64, bottom_right=True,
                                       window=40),
    "d128_bf16": Problem("bf16", 1, 2, 2, 70, 150, 128),
    "d128_causal_f16": Problem("f16", 1, 2, 1, 140, 150, 128, causal=True),
    "bias_f32_d64_bf16": Problem("bf16", 2, 2, 1, 70, 90, 64, bias=(2, 1, 70, 90),
                                 bias_type="f32"),
    "padding_f16": Problem("f16", 2, 2, 1, 140, 150, 64, bottom_right=True,
                           padding=((100, 140), (150, 33))),
}


@pytest.fixture(scope="module")
def gpu_cases():
    return _load_gpu_cases()


@pytest.mark.parametrize("name", sorted(NUMERICS))
def test_numerics_on_the_cpu(gpu_cases, name):
    """dq, dk and dv within the output type's tolerance of the float64
    reference (as test_attention_sm80_backward's); every element written."""
    from gpu_cases.case import RTOL

    p = NUMERICS[name]
    expected, got, config_text = interpret(p, config=FUSED)
    assert "fused = 1" in config_text, config_text
    rtol = RTOL[p.dtype]
    for x in ("dq", "dk", "dv"):
        reference = np.asarray(expected[x], np.float64)
        assert not np.isnan(got[x]).any(), x
        atol = rtol * max(1.0, float(np.abs(reference).max()))
        assert np.allclose(got[x], reference, rtol=rtol, atol=atol), \
            (x, float(np.max(np.abs(got[x] - reference))), atol)


@pytest.mark.parametrize("p, config, split", [
    (Problem("bf16", 1, 4, 2, 150, 140, 64, causal=True),
     "*=fused:1,tile:64x64,block:128,stages:3", "block = [128, 1, 1], fused = 1"),
    (Problem("f16", 1, 2, 1, 100, 150, 128), "*=fused:1,tile:64x32,block:128",
     "block = [128, 1, 1], fused = 1"),
    (Problem("bf16", 1, 2, 1, 100, 150, 64), "*=fused:1,tile:64x32",
     "block = [256, 1, 1], fused = 1"),
])
def test_numerics_of_override_tiles(gpu_cases, p, config, split):
    """Tiles a config names: 4 warps (64 kv rows a block; dQ_i's 16-row
    groups over one or two column groups), 32 query rows a step at D 64
    (four column groups of 16), 3 stages."""
    from gpu_cases.case import RTOL

    expected, got, config_text = interpret(p, config=config)
    assert split in config_text, config_text
    for x in ("dq", "dk", "dv"):
        reference = np.asarray(expected[x], np.float64)
        atol = RTOL[p.dtype] * max(1.0, float(np.abs(reference).max()))
        assert np.allclose(got[x], reference, rtol=RTOL[p.dtype], atol=atol), x


# ----------------------------------------------------------------------------
# The GPU family attention_backward_sm80_fused


def test_sm80_fused_family(gpu_cases):
    """attention_backward_sm80's problems, each case forced onto the fused
    kernel; its d64 graph compiles to three launches a kernel function on
    sm_90a, its d80 graph (20 columns a warp) to the two kernels, saying
    why."""
    family = gpu_cases.attention_backward_sm80_fused
    assert all(c.config == "*=strategy:tc-sm80,fused:1" for c in family.CASES)
    names = {c.name for c in family.CASES}
    assert {n.replace("_fused", "") for n in names} == \
        {c.name for c in gpu_cases.attention_backward_sm80.CASES}
    for graph, launches in (("d64_bf16", 9), ("d80_bf16", 4)):
        case = next(c for c in family.CASES if c.name.endswith(graph))
        package = compiler.compile_module(graph_mlir.to_module(case.build()), compiler.Options(
            target="cuda", arch="sm_90a", tuning_db="off", config=case.config),
            basename="main")
        kernels = backward_kernels(package)
        assert len(kernels) == launches and {k["strategy"] for k in kernels} == {"tc-sm80"}
        if launches == 4:
            assert all("the fused backward does not apply" in k["reason"] for k in kernels)
