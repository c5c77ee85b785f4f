"""GQA decode folded into one block per kv head (tc-sm90's attention
forward, Config.fold; dnnc/codegen/gpu/tensorcore/sm90/flash.py,
``GroupRows``) without a GPU:

* Heuristics (``_attention_fold``): an sdpa whose G = H / Hkv > 1 query
  heads a kv head have G x Sq rows within a block of 128 and no bias
  folds its groups (64 rows a block where they fit, else 128), the reason
  saying so; MHA, too many rows and a bias do not; split-KV counts the
  folded grid's B x Hkv blocks.
* The kernel's check refuses a fold that is not the whole group, rows
  past the tile, a bias.
* Plans: a block per (batch, kv head) and split; Q read in one TMA box of
  the group's G heads x Sq rows (in the order q's dims lie); o and the
  statistics from registers; the row map in the plan's reason ([B, H, S,
  D]: g x Sq + s; [B, S, H, D]: s x G + g); paged caches too; an override
  ``fold:1`` gives the unfolded kernel back.
* ptxas and the SASS of folded kernels (D 64 and 128, 64 and 128 rows,
  paged, split): no spills or local memory, HGMMA of the products' shapes,
  TMA loads, no wgmma hazards.
* The GPU family attention_gqa_fold covers what it says, and each of its
  sdpas compiles to a folded kernel, with split-KV and without.

The numerics run on a GPU (test/gpu, family attention_gqa_fold).
"""

import pytest
from mlir import ir

from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import sass
from dnnc.codegen.gpu.tensorcore.sm90 import NotSupported, flash
from dnnc.heuristics import rank
from kernel_builds import Builds, assert_no_local_memory, assert_shared_fit
from test_attention_tensor_cores import (
    attention, box_of, problem, sdpa_graph, tensor_of,
)
from test_attention_paged_tensor_cores import paged_graph, paged_problem
from test_cuda_compile import _load_gpu_cases
from test_tc_sass import ARCH, MAX_SHARED, needs_sass


def sizes(build):
    """(b, h, hk, sq, skv, d, dv) of ``build``'s sdpa (skv of a paged
    cache: its pages' rows), and its inputs by name."""
    inputs = {t.name: t for t in build().inputs}
    b, h, sq, d = (int(x) for x in inputs["q"].dim)
    _, hk, skv, dv = (int(x) for x in (inputs.get("v") or inputs["vc"]).dim)
    return (b, h, hk, sq, skv, d, dv), inputs


def first_sm90(p):
    (config,) = [c for c in rank(p) if c.strategy == "tc-sm90"][:1]
    return config


# ----------------------------------------------------------------------------
# Heuristics


@pytest.mark.parametrize("b, h, hk, sq, d, fold, bm", [
    (8, 32, 8, 1, 128, 4, 64),     # decode, G 4
    (2, 16, 8, 4, 64, 2, 64),      # G 2, four rows
    (2, 16, 2, 8, 128, 8, 64),     # G 8 x 8 rows: 64, one consumer warpgroup
    (2, 16, 2, 16, 64, 8, 128),    # G 8 x 16 rows: 128, two
    (1, 4, 1, 32, 128, 4, 128),    # MQA
    (8, 32, 32, 1, 128, 1, 64),    # MHA: nothing to fold
    (2, 16, 2, 17, 64, 1, 64),     # 136 rows: more than a block
    (2, 8, 2, 1000, 64, 1, 128),   # prefill
])
def test_heuristics_fold_the_group(b, h, hk, sq, d, fold, bm):
    first = first_sm90(problem(sq, 8192, d, d, b=b, h=h, hk=hk))
    assert (first.fold, first.tile[0]) == (fold, bm), first
    folded = (f"the {fold} query heads of each kv head folded into one block ({fold} x {sq} "
              "rows: each K and V tile read once for the group)")
    assert (folded in first.reason) == (fold > 1), first.reason
    # Every tc-sm90 config of the problem folds alike.
    assert {c.fold for c in rank(problem(sq, 8192, d, d, b=b, h=h, hk=hk))
            if c.strategy == "tc-sm90"} == {fold}


def test_heuristics_keep_a_biased_group_unfolded():
    first = first_sm90(problem(1, 8192, 128, 128, b=8, h=32, hk=8, bias=[1, 32, 1, 8192]))
    assert first.fold == 1 and "folded" not in first.reason, first


@pytest.mark.parametrize("b, h, hk, skv, split", [
    (8, 32, 8, 8192, 2),      # 64 blocks, not 256: 2 splits each
    (1, 32, 8, 131072, 16),   # 8 blocks: the most splits
    (4, 32, 8, 32768, 4),     # 32 blocks
    (16, 16, 16, 8192, 1),    # MHA, 256 blocks: none
    (9, 32, 8, 8192, 1),      # 72 blocks: enough
])
def test_split_counts_the_folded_blocks(b, h, hk, skv, split):
    first = first_sm90(problem(1, skv, 128, 128, b=b, h=h, hk=hk))
    assert first.split == split, first
    assert ("split over" in first.reason) == (split > 1), first.reason


def test_paged_decode_folds():
    first = first_sm90(paged_problem(64, 8192))
    assert (first.fold, first.split, first.tile) == (4, 2, (64, 128)), first


# ----------------------------------------------------------------------------
# The kernel's check


def grouped(sq, bias=None):
    """An Attention of 8 query heads over 2 (G 4) with ``sq`` query rows."""
    att = attention(128, 128, bias=bias)
    att.sq = sq
    return att


@pytest.mark.parametrize("att, tile, why", [
    (grouped(1), flash.FlashTile(64, 128, 2, fold=2),
     "2 query heads folded into a block: expected the group's H / Hkv = 4"),
    (grouped(17), flash.FlashTile(64, 128, 2, fold=4),
     "4 query heads of Sq = 17 rows folded into a block: 68 rows, expected at most 64"),
    (grouped(1, bias="bf16"), flash.FlashTile(64, 64, 2, fold=4),
     "a bias with query heads folded into a block: expected none"),
])
def test_kernel_check_of_the_fold(att, tile, why):
    with ir.Context(), pytest.raises(NotSupported, match=f"^{why}$"):
        flash.check(att, tile)


def test_kernel_check_takes_the_group():
    flash.check(grouped(16), flash.FlashTile(64, 128, 2, fold=4))
    flash.check(grouped(32), flash.FlashTile(128, 128, 2, fold=4))


# ----------------------------------------------------------------------------
# Plans


FOLDED = {
    # name: (graph builder, G, heads outside the rows in q's memory order)
    "decode_d128_bf16": (sdpa_graph("decode_d128_bf16", "bf16", 8, 32, 8, 1, 8192, 128), 4,
                         True),
    "bshd_padding_f16": (sdpa_graph("bshd_padding_f16", "f16", 2, 16, 2, 3, 3000, 64,
                                    interleaved=("q", "o"), bottom_right=True,
                                    padding=True), 8, False),
    "rows128_causal_bf16": (sdpa_graph("rows128_causal_bf16", "bf16", 1, 16, 2, 16, 3000, 64,
                                       bottom_right=True), 8, True),
    "short_f16": (sdpa_graph("short_f16", "f16", 9, 16, 8, 4, 900, 128, stats=False), 2,
                  True),
    "paged_bf16": (paged_graph("paged_bf16", 64, b=2, h=8, hk=2, sq=2, skv=4000,
                               use_causal_mask_bottom_right=True), 4, True),
}


# Each FOLDED graph compiled once per override, and assembled once.
_built = Builds(lambda name: FOLDED[name][0](), ARCH)


def package_of(name, config=None):
    return _built.package(name, config=config)


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_folded_plan(name):
    build, group, heads_outer = FOLDED[name]
    package = package_of(name)
    (b, h, hk, sq, skv, d, dv), inputs = sizes(build)
    k = package.kernels[0]
    config = k["config"]
    split = config.get("split", 1)
    assert [x["strategy"] for x in package.kernels] == ["tc-sm90"] * (1 + (split > 1)), \
        [(x["entry"], x["reason"]) for x in package.kernels]
    assert config["fold"] == group == h // hk
    bm, bn = config["tile"]
    assert bm == (64 if group * sq <= 64 else 128)
    assert k["grid"] == [1, b * hk, split]
    assert k["block"] == [128 * (1 + bm // 64), 1, 1]
    assert k["shared_bytes"] == flash.smem_bytes(flash.FlashTile(bm, bn, config["stages"]),
                                                 d, dv)
    rows = "g x Sq + s" if heads_outer else "s x G + g"
    assert (f"the {group} query heads g of each kv head in one block's rows (row {rows} for "
            "query s), each K and V tile read once for the group") in k["reason"], k["reason"]
    manifest = package.manifest
    args = k["args"]
    (q,) = [a for a in args if a["kind"] == "tma" and tensor_of(manifest, a) == "q"]
    assert q["box"] == box_of(inputs, "q", sq, group), q
    # o and the statistics (or split-KV's workspaces) from registers.
    written = [a for a in args if a["kind"] != "tma"]
    assert written and all(a["kind"] == "buffer" for a in written), args
    assert not any(tensor_of(manifest, a) == "o" for a in args if a["kind"] == "tma")


def test_override_unfolds():
    """``fold:1`` on the kernel: the kernel a block per (query tile, batch,
    query head), Q in boxes of the tile's rows."""
    build = FOLDED["decode_d128_bf16"][0]
    (b, h, hk, sq, skv, d, dv), inputs = sizes(build)
    package = package_of("decode_d128_bf16", "*=fold:1,split:1")
    k = package.kernels[0]
    assert k["config"].get("fold", 1) == 1, k["config"]
    assert "query heads g of each kv head" not in k["reason"], k["reason"]
    assert k["grid"] == [1, b * h, 1]
    q = k["args"][0]
    assert q["box"] == box_of(inputs, "q", k["config"]["tile"][0]), q


@needs_sass
@pytest.mark.parametrize("name", sorted(FOLDED))
def test_folded_sass(name):
    """ptxas's verdict and the SASS of the folded kernel: no spills, stack
    or local memory; registers within the block's; HGMMA 64 x BN x 16 and
    64 x Dv x 16 on the input type; TMA loads, ex2; no register of a wgmma
    in flight touched."""
    build = FOLDED[name][0]
    (_, _, _, _, _, _, dv), _ = sizes(build)
    package = package_of(name)
    k = package.kernels[0]
    resources, functions = _built.assembly(name)
    for entry, r in resources.items():
        assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), (entry, r)
    r = resources[k["entry"]]
    assert 0 < r.registers <= 65536 // k["block"][0] // 8 * 8, r
    assert_shared_fit([k], resources, MAX_SHARED)
    assert_no_local_memory([k], functions)
    text = functions[k["entry"]]
    counts = sass.opcodes(text)
    assert counts["USETMAXREG"] > 0
    suffix = ".BF16" if name.endswith("bf16") else ""
    bn = k["config"]["tile"][1]
    assert {op for op in counts if op.startswith("HGMMA.")} == \
        {f"HGMMA.64x{bn}x16.F32{suffix}", f"HGMMA.64x{dv}x16.F32{suffix}"}, sorted(counts)
    assert counts["UTMALDG"] > 0 and counts["MUFU.EX2"] > 0
    assert counts["UTMASTG"] == 0  # o from registers: no TMA store past the group
    assert sass.wgmma_hazards(text) == []
    assert sass.wgmma_fragment_hazards(text) == []


# ----------------------------------------------------------------------------
# The GPU family


@pytest.fixture(scope="module")
def family():
    return _load_gpu_cases().attention_gqa_fold


def test_family_draws(family):
    configs = family.CONFIGS
    assert {a.heads // a.kv_heads for a in configs} == {2, 4, 8}
    assert {a.sq for a in configs} >= {1, 2, 4}
    assert {a.d for a in configs} == {64, 128}
    assert {a.interleaved for a in configs} == {False, True}
    assert {a.causal for a in configs} == {False, True}
    assert {bool(a.page) for a in configs} == {False, True}
    lengths = [x for a in configs if a.lengths for x in a.lengths[1]]
    assert 0 in lengths and any(0 < x < 32 for x in lengths)
    assert any(0 < x < a.sq for a in configs if a.lengths for x in a.lengths[0])
    assert {c.name.rsplit("_", 1)[1] for c in family.CASES} == {"bf16", "f16"}


def test_family_plans(family):
    """Each sdpa of the family folds its group (a merging kernel of 128
    threads after it with split-KV); the family has splits and none."""
    splits = set()
    for configs, case in zip(family.GRAPHS, family.CASES[::2]):
        package = compiler.compile_module(graph_mlir.to_module(case.build()), compiler.Options(
            target="cuda", arch=ARCH, tuning_db="off"), basename="main")
        folded = [k for k in package.kernels if k["block"][0] > 128]
        assert len(folded) == len(configs), [k["entry"] for k in package.kernels]
        for att, k in zip(configs, folded):
            assert k["strategy"] == "tc-sm90", k["reason"]
            assert k["config"]["fold"] == att.heads // att.kv_heads, (att, k["config"])
            assert k["grid"][:2] == [1, att.batch * att.kv_heads], (att, k["grid"])
            splits.add(k["config"].get("split", 1) > 1)
    assert splits == {False, True}
