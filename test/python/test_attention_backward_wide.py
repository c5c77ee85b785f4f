"""The attention backward for head dims over 128 on tc-sm90 without a GPU
(dnnc/codegen/gpu/tensorcore/sm90/flash_backward_wide.py, and
flash_backward.wide_tiles): which config the heuristics rank, which tiles
the kernels take, what the plan holds and what ptxas makes of it.

* Heuristics: an sdpa_backward of head dims over 128 (up to 256, d_v below
  or above d_qk) ranks tc-sm90's two kernels first (tile 128x128, 384
  threads), the reason naming the dK dV kernel of 64 kv rows and why not
  the fused kernel; so does the deterministic mode; simt-generic after.
* ``wide_tiles``: the most rows a step (64, 32, 16) whose registers
  (``dq_registers``, ``wide_dkv_registers``) come to at most
  WIDE_REGISTERS with two ring stages or more, as many stages as shared
  memory holds; ``check`` refuses a dK dV block of 128 kv rows for them.
* ``WIDE``: bf16 and f16 graphs of one sdpa_backward (D 136 to 256, Dv
  below and above D, grouped heads, causal either alignment, a window, a
  bias, lengths that are no multiple of a tile, tensors stored (B, S, H,
  D), gradients in f32) compile to two launches of one kernel function:
  the dQ kernel (a block per 128 query rows of a (batch, head); q and do
  by TMA in 128-row boxes, k and v in boxes of a step's rows) and the dK
  dV kernel (a block per 64 kv rows of a (batch, kv head); k and v in
  64-row boxes, q and do in boxes of a step's rows); shared memory as
  ``_smem`` counts it, within sm_90's.
* ptxas and SASS (skipped without ptxas or cuobjdump): no spills, stack or
  local memory; setmaxnreg kept; HGMMA of the dQ kernel 64 x n x 16 (S,
  dP) and 64 x D x 16 (dQ), of the dK dV kernel 64 x m x 16 (Sᵀ, dPᵀ),
  64 x D x 16 (dK) and 64 x Dv x 16 (dV); no atomics; no accumulator or
  fragment register touched while its wgmma may run.
* Ragged (packed) tensors: the wide kernels take them at each entry's
  packed rows, without spills.
"""

import dataclasses

import pytest
from mlir import ir

from dnnc.codegen.gpu import ptxas, sass
from dnnc.codegen.gpu.tensorcore.sm90 import NotSupported, flash_backward
from dnnc.heuristics import rank
from kernel_builds import (Builds, assert_fit, assert_no_local_memory, assert_no_spills,
                           atomics, family)
from test_attention_tensor_cores import (
    attention, backward_graph, backward_problem, box_of, padded, sizes, tensor_of,
    without_lengths,
)
from test_tc_sass import ARCH, MAX_SHARED, PTXAS_MISSING, needs_sass

WIDE = {
    "d256_bf16": backward_graph("d256_bf16", "bf16", 2, 4, 2, 300, 333, 256),
    "d256_causal_f16": backward_graph("d256_causal_f16", "f16", 1, 8, 2, 333, 300, 256,
                                      causal=True),
    "d192_dv128_causal_bf16": backward_graph("d192_dv128_causal_bf16", "bf16", 2, 4, 4, 257,
                                             300, 192, dv=128, causal=True),
    "d192_bottom_right_bf16": backward_graph("d192_bottom_right_bf16", "bf16", 1, 4, 1, 130,
                                             260, 192, bottom_right=True),
    "d160_window_f16": backward_graph("d160_window_f16", "f16", 1, 2, 2, 200, 190, 160,
                                      window=50),
    "d64_dv256_bf16": backward_graph("d64_dv256_bf16", "bf16", 1, 2, 1, 100, 150, 64, dv=256),
    "d224_bias_bf16": backward_graph("d224_bias_bf16", "bf16", 1, 2, 2, 100, 120, 224,
                                     bias=[1, 2, 100, 120]),
    "d192_dv128_bias_f16": backward_graph("d192_dv128_bias_f16", "f16", 2, 2, 1, 90, 77, 192,
                                          dv=128, bias=[2, 1, 1, 77], causal=True),
    "d256_bias_f16": backward_graph("d256_bias_f16", "f16", 1, 4, 2, 150, 170, 256,
                                    bias=[1, 4, 150, 170], causal=True),
    "d256_padding_causal_bf16": backward_graph("d256_padding_causal_bf16", "bf16", 3, 2, 2,
                                               200, 250, 256, causal=True, padding=True),
    "d256_interleaved_f16": backward_graph(
        "d256_interleaved_f16", "f16", 1, 4, 2, 100, 150, 256,
        interleaved=("q", "k", "v", "o", "do", "dq", "dk", "dv"),
        types={"o": "f32", "dq": "f32", "dk": "f32"}),
}
# Graphs whose SASS is checked: every head dim, the masks, a bias, lengths.
SASS_CASES = ("d256_bf16", "d256_causal_f16", "d192_dv128_causal_bf16",
              "d192_bottom_right_bf16", "d160_window_f16", "d64_dv256_bf16", "d224_bias_bf16",
              "d192_dv128_bias_f16", "d256_bias_f16", "d256_padding_causal_bf16")
# Graphs whose kernels ptxas spills (none).
SASS_XFAIL = {}


@pytest.fixture(scope="module")
def built():
    """Each graph compiled and assembled at most once."""
    return Builds(lambda name: WIDE[name](), ARCH)


@pytest.mark.parametrize("d, dv", [(256, 256), (192, 128), (160, 160), (136, 64), (64, 256),
                                   (128, 136), (248, 8)])
@pytest.mark.parametrize("deterministic", [False, True])
def test_heuristics_rank_the_two_kernels(d, dv, deterministic):
    problem = backward_problem(300, 333, d, dv)
    if deterministic:
        problem = dataclasses.replace(problem, anchor_attrs=(("deterministic", True),))
    configs = rank(problem)
    first = configs[0]
    assert (first.strategy, first.block, first.tile) == ("tc-sm90", (384, 1, 1), (128, 128)), \
        first
    assert [c.strategy for c in configs[1:]] == ["simt-generic"] * (len(configs) - 1)
    facts = f"sdpa_backward: 300x333x{d} (S x Skv x D) x16 batch bf16"
    assert first.reason.startswith(
        f"attention backward ({facts}): a dQ kernel (128 query rows a block) and a dK dV "
        "kernel (64 kv rows a block, dK and dV in separate consumer warpgroups), no atomics "
        "(deterministic); " + ("the graph asks for a deterministic backward" if deterministic
                               else "not the fused kernel: head dim ")), first.reason


@pytest.mark.parametrize("d, dv", [(264, 64), (64, 264), (512, 512)])
def test_heuristics_keep_wider_head_dims_on_simt_generic(d, dv):
    configs = rank(backward_problem(100, 100, d, dv))
    assert {c.strategy for c in configs} == {"simt-generic"}
    assert configs[0].reason.startswith(
        f"tc-sm90's attention kernels do not take it (sdpa_backward: 100x100x{d} (S x Skv x "
        "D) x16 batch bf16): head dims up to 256"), configs[0].reason


@pytest.mark.parametrize("d, dv, bias, dq_n, dkv_m, dq_stages, dkv_stages", [
    (256, 256, False, 32, 64, 2, 2),   # 64 kv rows a dQ step: no two stages
    (256, 256, True, 32, 32, 2, 4),
    (192, 128, False, 64, 64, 3, 4),
    (192, 192, True, 64, 64, 2, 3),
    (224, 224, True, 32, 32, 2, 4),
    (160, 160, True, 64, 64, 2, 3),
    (136, 64, False, 64, 64, 4, 4),
    (64, 256, False, 64, 64, 3, 4),
])
def test_wide_tiles(d, dv, bias, dq_n, dkv_m, dq_stages, dkv_stages):
    """The most rows a step within the registers, the most stages within
    shared memory; a block of 64 kv rows for the dK dV kernel."""
    tiles = flash_backward.tiles_for(d, dv, bias)
    assert tiles.wide and tiles.dkv_rows == 64 and tiles.rows == 128
    assert (tiles.dq_n, tiles.dkv_m, tiles.dq_stages, tiles.dkv_stages) == \
        (dq_n, dkv_m, dq_stages, dkv_stages), tiles
    assert flash_backward.dq_registers(d, dq_n, bias) <= flash_backward.WIDE_REGISTERS
    assert flash_backward.wide_dkv_registers(d, dv, dkv_m, bias) <= \
        flash_backward.WIDE_REGISTERS
    with ir.Context():
        flash_backward.check(attention(d, dv, bias="bf16" if bias else None, backward=True),
                             tiles)


def test_narrow_head_dims_keep_their_tiles():
    """Head dims up to 128: the dK dV kernel of 128 kv rows, as before."""
    for d, dv in ((128, 128), (64, 128), (8, 8)):
        tiles = flash_backward.tiles_for(d, dv)
        assert not tiles.wide and tiles.dkv_rows == 128 and tiles.dq_n == 64


def test_check_refuses_a_narrow_block_for_wide_head_dims():
    narrow = flash_backward.tiles_for(128, 128)
    with ir.Context(), pytest.raises(NotSupported) as err:
        flash_backward.check(attention(192, 128, backward=True), narrow)
    assert "head dims 192, 128 over 128: expected a dK dV block of 64 kv rows, got 128" in \
        str(err.value)


@pytest.mark.parametrize("name", sorted(WIDE))
def test_wide_plan(built, name):
    package = built.package(name)
    manifest = package.manifest
    kernels = package.kernels
    assert [(k["strategy"], k["block"][0]) for k in kernels] == [("tc-sm90", 384)] * 2, \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    dq, dkv = kernels
    assert dq["name"] == dkv["name"] and dq["entry"] != dkv["entry"]
    (b, h, hk, sq, skv, d, dv), inputs = sizes(WIDE[name])
    padding = "seq_len_q" in inputs
    tiles = flash_backward.tiles_for(d, dv, "bias" in inputs)
    assert dq["grid"] == [-(-sq // 128), b * h, 1]
    assert dkv["grid"] == [-(-skv // 64), b * hk, 1]
    assert dq["reason"].endswith(
        f"attention backward: a dQ kernel (128 query rows a block, {tiles.dq_n} kv rows a "
        f"step, {tiles.dq_stages} stages; delta = rowsum(dO o O) into a workspace) and a dK dV "
        f"kernel (64 kv rows a block: dK in one consumer warpgroup, dV in the other, both "
        f"computing S, {tiles.dkv_m} query rows a step, {tiles.dkv_stages} stages), products "
        "on wgmma, no atomics"), dq["reason"]

    def shared(rows, ring_rows, stages):
        # Two resident tiles, a ring of two tiles a stage, the barriers,
        # 1024 bytes of alignment slack.
        widths = padded(d) + padded(dv)
        return 1024 + 8 * (1 + 2 * stages) + 2 * widths * (rows + stages * ring_rows)
    assert dq["shared_bytes"] == shared(128, tiles.dq_n, tiles.dq_stages) <= MAX_SHARED
    # The dK dV kernel's staged log-sum-exp and delta: 2048 bytes.
    assert dkv["shared_bytes"] == shared(64, tiles.dkv_m, tiles.dkv_stages) + 2048 \
        <= MAX_SHARED
    for kernel, tma in ((dq, (("q", 128), ("do", 128), ("k", tiles.dq_n), ("v", tiles.dq_n))),
                        (dkv, (("k", 64), ("v", 64), ("q", tiles.dkv_m),
                               ("do", tiles.dkv_m)))):
        args = without_lengths(manifest, kernel["args"], padding)
        assert [(a["kind"], tensor_of(manifest, a)) for a in args[:4]] == \
            [("tma", x) for x, _ in tma], args
        for arg, (x, rows) in zip(args, tma):
            assert arg["box"] == box_of(inputs, x, rows), (x, arg)
        assert all(a["kind"] in ("buffer", "scalar") for a in args[4:]), args
    rest = [sorted(tensor_of(manifest, a) for a in without_lengths(
        manifest, kernel["args"], padding)[4:] if a["kind"] == "buffer") for kernel in kernels]
    bias = ["bias"] if "bias" in inputs else []
    assert rest == [sorted(["stats", "o", "do", "workspace", "dq"] + bias),
                    sorted(["stats", "workspace", "dk", "dv"] + bias)]


@needs_sass
@pytest.mark.parametrize("name", [
    pytest.param(name, marks=[pytest.mark.xfail(strict=True, reason=SASS_XFAIL[name])]
                 if name in SASS_XFAIL else []) for name in SASS_CASES])
def test_wide_sass(built, name):
    (_, _, _, _, _, d, dv), inputs = sizes(WIDE[name])
    tiles = flash_backward.tiles_for(d, dv, "bias" in inputs)
    kernels = built.package(name).kernels
    resources, functions = built.assembly(name)
    suffix = ".BF16" if name.endswith("bf16") else ""
    dq_dkv = kernels[:2]
    assert_fit(dq_dkv, resources, MAX_SHARED)
    assert_no_local_memory(dq_dkv, functions)
    for k, widths in zip(dq_dkv, ({tiles.dq_n, d}, {tiles.dkv_m, d, dv})):
        text = functions[k["entry"]]
        counts = sass.opcodes(text)
        assert counts["USETMAXREG"] > 0, f"{k['entry']}: ptxas ignored setmaxnreg"
        assert family(counts, "HGMMA.") == \
            {f"HGMMA.64x{n}x16.F32{suffix}" for n in widths}, (k["entry"], sorted(counts))
        assert counts["UTMALDG"] > 0 and counts["SYNCS"] > 0 and counts["MUFU.EX2"] > 0, \
            (k["entry"], sorted(counts))
        assert not atomics(counts)
        assert sass.wgmma_hazards(text) == []
        assert sass.wgmma_fragment_hazards(text) == []


@pytest.mark.parametrize("d, masks", [(256, {"use_causal_mask": True}),
                                      (192, {"use_causal_mask_bottom_right": True}),
                                      (160, {})])
def test_ragged_wide_backward(d, masks):
    """Ragged (packed) tensors: the wide kernels read and write each
    entry's packed rows, as the narrower head dims' do; ptxas spills
    nothing (with ptxas)."""
    from test_attention_ragged_tensor_cores import compiled, ragged_graph

    package = compiled(ragged_graph(f"ragged_wide_{d}", d=d, backward=True, **masks))
    kernels = package.kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm90"] * 2, kernels[0]["reason"]
    reason = kernels[0]["reason"]
    assert "a dK dV kernel (64 kv rows a block: dK in one consumer warpgroup" in reason, reason
    assert "ragged q, k, v, o, do, dq, dk, dv at each entry's packed rows" in reason, reason
    assert kernels[1]["grid"][0] == -(-300 // 64)
    if PTXAS_MISSING:
        return
    resources, _ = ptxas.assemble_cubin(package.ptx, ARCH)
    assert_no_spills(kernels, resources)
