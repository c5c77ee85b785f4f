"""tc-sm90's attention forward over a paged KV cache (sm90/paged.py): the
heuristics (Skv from max_seq_len_kv, tiles the page fits, the fallback's
reason), the matcher, the kernel's page check, the plans of the GPU family
attention_paged, and what ptxas makes of the kernels (HGMMA, TMA loads, no
spills). Numerics run on a GPU (test/gpu, family attention_paged); the
semantics are checked in test_attention_paged.py.
"""

import math
import re
from types import SimpleNamespace

import pytest

import dnnc
from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import irutil, ptxas, sass
from dnnc.codegen.gpu.tensorcore import attention as attention_match
from dnnc.codegen.gpu.tensorcore.sm90 import NotSupported, paged
from dnnc.heuristics import Problem, TensorSpec, rank
from test_attention_tensor_cores import bufferized_kernel, family_plan, linalg_kernel
from test_cuda_compile import _load_gpu_cases
from test_tc_sass import ARCH, MAX_SHARED, needs_sass


def paged_problem(page, skv, sq=1, b=8, h=32, hk=8, d=128, slots=None):
    """The heuristics' Problem of a paged sdpa kernel: q, the caches, the
    lengths and the tables; o."""
    slots = slots or math.ceil(skv / page)
    pages = b * slots
    ins = (TensorSpec((b, h, sq, d), "bf16"), TensorSpec((pages, hk, page, d), "bf16"),
           TensorSpec((pages, hk, page, d), "bf16"), TensorSpec((b, 1, 1, 1), "i32"),
           TensorSpec((b, 1, 1, 1), "i32"), TensorSpec((b, 1, slots, 1), "i32"),
           TensorSpec((b, 1, slots, 1), "i32"))
    outs = (TensorSpec((b, h, sq, d), "bf16"),)
    return Problem(kernel="k", anchor="sdpa", ops=("sdpa",), inputs=ins, outputs=outs,
                   arch=ARCH, anchor_inputs=ins, anchor_outputs=outs,
                   anchor_attrs=(("max_seq_len_kv", skv), ("padding", True)))


@pytest.mark.parametrize("page, widths", [(64, {64, 128}), (256, {64, 128}), (16, {64, 128}),
                                          (8, {64, 128}), (32, {64, 128})])
def test_heuristics_take_pages_the_kernel_reads(page, widths):
    """A decode step (B8, 32 query heads over 8, D128) over 8192 kv rows:
    tc-sm90 with kv tiles the page fits, the groups folded, split over
    blocks as the contiguous cache's Skv would be (Skv is max_seq_len_kv,
    not the page)."""
    configs = [c for c in rank(paged_problem(page, 8192)) if c.strategy == "tc-sm90"]
    assert configs and {c.tile[1] for c in configs} <= widths
    for c in configs:
        assert page % c.tile[1] == 0 or (c.tile[1] % page == 0 and page % 8 == 0)
    # The 4 heads of a group in a block: 8 x 8 blocks, each kv tile range
    # split in 2 for 132 SMs; B1 more.
    assert (configs[0].fold, configs[0].split) == (4, 2), configs[0]
    small = [c for c in rank(paged_problem(page, 8192, b=1)) if c.strategy == "tc-sm90"]
    assert small[0].split > 2, small[0]
    # Without groups (MHA), 8 x 32 blocks of one query tile fill the SMs.
    mha = [c for c in rank(paged_problem(page, 8192, hk=32)) if c.strategy == "tc-sm90"]
    assert (mha[0].fold, mha[0].split) == (1, 1), mha[0]


def test_heuristics_send_other_pages_to_simt_generic():
    configs = rank(paged_problem(48, 4096))
    assert {c.strategy for c in configs} == {"simt-generic"}
    assert "a paged K and V of page size 48: expected a multiple of 64, or 8, 16 or 32" in \
        configs[0].reason, configs[0].reason
    assert "1x4096x128 (S x Skv x D)" in configs[0].reason, configs[0].reason


@pytest.mark.parametrize("page, n, ok", [(64, 64, True), (128, 64, True), (256, 128, True),
                                         (64, 128, True), (8, 128, True), (16, 64, True),
                                         (96, 64, False), (48, 128, False), (4, 64, False),
                                         (12, 64, False), (192, 128, False)])
def test_kernel_check_of_the_page(page, n, ok):
    att = SimpleNamespace(page=page)
    if ok:
        paged.check_pages(att, n)
        return
    with pytest.raises(NotSupported, match=f"page size {page} and {n} kv rows a step: "
                                           f"expected a page size that is a multiple of {n}"):
        paged.check_pages(att, n)


def paged_graph(name, page, b=2, h=8, hk=2, sq=1, skv=300, d=128, slots=None, **masks):
    def build():
        t = slots or math.ceil(skv / page)
        g = dnnc.Graph(name=name, io_data_type="bf16")
        q = g.tensor(name="q", dim=[b, h, sq, d])
        kc, vc = (g.tensor(name=x, dim=[b * t + 1, hk, page, d]) for x in ("kc", "vc"))
        kt, vt = (g.tensor(name=x, dim=[b, 1, t, 1], data_type="int32") for x in ("kt", "vt"))
        lq, lkv = (g.tensor(name=x, dim=[b, 1, 1, 1], data_type="int32")
                   for x in ("lq", "lkv"))
        o, s = g.sdpa(q, kc, vc, generate_stats=True, use_padding_mask=True, seq_len_q=lq,
                      seq_len_kv=lkv, paged_attention_k_table=kt, paged_attention_v_table=vt,
                      paged_attention_max_seq_len_kv=skv, **masks)
        o.set_output(True)
        s.set_output(True)
        return g
    return build


def test_attention_attribute_records_the_page_tables():
    """The tables are the kernel's arguments after the lengths; the
    attribute carries max_seq_len_kv (only when paged)."""
    module, fn = linalg_kernel(paged_graph("recorded_pages", 64, skv=300, slots=6))
    with module.context:
        info = str(fn.attributes[attention_match.ATTR])
    assert "max_seq_len_kv = 300 : i64" in info, info
    assert "operands = array<i64: 0, 1, 2, -1, 3, 4, 5, 6, -1, -1, -1, -1>, padding = " \
        "true" in info, info


def test_matcher_reads_the_paged_cache():
    module, fn = bufferized_kernel(paged_graph("matched_pages", 16, hk=2, skv=300, slots=20))
    with module.context:
        att = attention_match.match(fn)
        assert att.paged and att.page == 16
        assert (att.batch, att.heads, att.kv_heads, att.sq, att.skv, att.d) == \
            (2, 8, 2, 1, 300, 128)
        assert att.padding
        args = list(irutil.body(fn).arguments)
        assert (att.page_table_k, att.page_table_v) == (args[5], args[6])


def test_tc_sm80_refuses_a_paged_cache():
    build = paged_graph("sm80_pages", 64, sq=100)
    package = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch="sm_80", tuning_db="off"), basename="sm80_pages")
    kernels = [k for k in package.kernels if "sdpa" in k["name"]]
    assert kernels and all(k["strategy"] == "simt-generic" for k in kernels)
    # (it names the first feature it lacks: the padding mask's lengths.)
    assert "not implemented in tc-sm80's attention kernel" in kernels[0]["reason"], \
        kernels[0]["reason"]


@pytest.fixture(scope="module")
def gpu_cases():
    return _load_gpu_cases()


def test_paged_family_draws(gpu_cases):
    family = gpu_cases.attention_paged
    configs = family.CONFIGS
    assert {a.page for a in configs} == set(family.PAGES)
    assert {a.heads // a.kv_heads for a in configs} >= {1, 2, 4}
    assert any(a.kv_heads == 1 and a.heads > 1 for a in configs)  # MQA
    assert any(a.sq == 1 for a in configs) and any(a.sq >= 64 for a in configs)
    lengths = [x for a in configs for x in a.lengths_kv]
    assert 0 in lengths and any(x % a.page for a in configs for x in a.lengths_kv if x)
    assert any(x > a.skv for a in configs for x in a.lengths_kv)


@pytest.mark.parametrize("graph", [0, 2, 3, 4])
def test_paged_family_plans(gpu_cases, graph):
    """Every configuration of a page tc-sm90 reads: one tc-sm90 kernel (a
    merging one after it when split-KV); page 48: simt-generic, the reason
    naming the page size."""
    family = gpu_cases.attention_paged
    configs = family.GRAPHS[graph]
    case = family.CASES[graph]
    package = compiler.compile_module(graph_mlir.to_module(case.build()), compiler.Options(
        target="cuda", arch=ARCH, tuning_db="off"), basename="main")
    by_config, copies = family_plan(package)
    assert sorted(by_config) == list(range(len(configs)))
    splits = 0
    for i, att in enumerate(configs):
        (kernels,) = by_config[i].values()
        if att.page == 48:
            assert all(k["strategy"] == "simt-generic" for k in kernels), att
            assert any("page size 48" in k["reason"] for k in kernels), kernels[0]["reason"]
            continue
        split = kernels[0]["config"].get("split", 1)
        splits += split > 1
        assert [k["strategy"] for k in kernels] == ["tc-sm90"] * (1 + (split > 1)), \
            (att, kernels[0]["reason"])
    if graph == 4:  # the decode steps over long caches
        assert splits >= 2
    assert copies == {}


SASS_PAGES = {"page64": dict(page=64), "page256_window": dict(
    page=256, sq=4, skv=3000, use_causal_mask_bottom_right=True, sliding_window_length=500),
    "page16_gqa": dict(page=16, h=16, hk=2, sq=77, skv=333)}


@needs_sass
@pytest.mark.parametrize("name", sorted(SASS_PAGES))
def test_paged_attention_sass(name):
    """ptxas's verdict and the SASS of the paged forward kernel: no spills,
    stack or local memory, shared memory within sm_90's; HGMMA on bf16;
    the TMA loads (UTMALDG) one a box per page of a tile; the table read
    from global memory."""
    build = paged_graph(name, **SASS_PAGES[name])
    package = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=ARCH, tuning_db="off"), basename=name)
    k = package.kernels[0]
    assert k["strategy"] == "tc-sm90", k["reason"]
    resources, cubin = ptxas.assemble_cubin(package.ptx, ARCH)
    r = resources[k["entry"]]
    assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), (k["entry"], r)
    assert k["shared_bytes"] + r.shared_bytes <= MAX_SHARED
    text = sass.functions(sass.disassemble(cubin))[k["entry"]]
    counts = sass.opcodes(text)
    assert counts["LDL"] == counts["STL"] == 0
    bn = k["config"]["tile"][1]
    assert {op for op in counts if op.startswith("HGMMA.")} == \
        {f"HGMMA.64x{bn}x16.F32.BF16", "HGMMA.64x128x16.F32.BF16"}, sorted(counts)
    page = SASS_PAGES[name]["page"]
    # Q's 2 boxes, then K's and V's: 2 boxes each, a load per page of a tile.
    loads = 2 + 2 * 2 * max(1, bn // page)
    assert counts["UTMALDG"] >= loads, (counts["UTMALDG"], loads)
    entry = re.split(r"^\.visible \.entry ", package.ptx, flags=re.M)
    body = next(t for t in entry if t.startswith(k["entry"]))
    assert "ld.global" in body  # the lengths and the table entries
