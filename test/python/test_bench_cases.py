"""bench/cases.py and bench/run.py without a GPU.

* The cases together use every op of the dialect; names (and so package file
  names) are unique; groups are the documented ones.
* FLOPs and bytes are sane: bytes lie between what the graph writes and what
  it reads and writes in all, compute-bound cases count FLOPs.
* Each PyTorch reference runs on torch's meta device (shapes and dtypes, no
  arithmetic) with inputs shaped, strided and typed as the graph's, through
  the case's ``init`` and ``torch_prepare``, and gives the graph's outputs:
  same dtype, same number of elements (parameter gradients may drop the
  broadcast dims), never more outputs than the graph.
* The runner's ``--only`` selection, its error measure, its host timing of
  the tiny cases, and one whole measurement on the CPU with a stand-in
  executable, including a PyTorch reference that raises (an error row, not an
  exception) and a case's other PyTorch path that raises (a missing time,
  not an error row); ``run`` without a GPU says so.
* The attention forward cases: one per shape of the issue's table, the
  reference pinned to cuDNN attention and SDPA's flash backend beside it.
"""

import argparse
import functools
import math
import re
import sys
import types

import pytest

import dnnc.dialect

import benchutil


cases = benchutil.load("bench_cases", "cases.py")
runner = benchutil.load("bench_run", "run.py")
CASES = cases.CASES
IDS = [c.name for c in CASES]


@functools.lru_cache(maxsize=None)
def graph(name):
    return next(c for c in CASES if c.name == name).build()


def io_bytes(tensors):
    return sum(math.prod(t.dim) * t.get_data_type().itemsize for t in tensors)


def test_every_op_is_benchmarked():
    used = set()
    for c in CASES:
        used |= set(re.findall(r'"dnn\.(\w+)"', graph(c.name).to_mlir()))
    missing = sorted({d.name for d in dnnc.dialect.all_ops()} - used)
    assert not missing, f"ops no benchmark case uses: {missing}"


def test_names_and_groups():
    assert len(set(IDS)) == len(IDS)
    slugs = [runner._slug(n) for n in IDS]
    assert len(set(slugs)) == len(slugs), "two cases would share a package file"
    assert {c.group for c in CASES} == set(cases.GROUPS)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_flops_and_bytes(case):
    g = graph(case.name)
    written = io_bytes(g.outputs)
    assert 0 < written <= case.bytes <= io_bytes(g.inputs) + written
    assert case.flops >= 0
    if not case.memory_bound:
        assert case.flops > 0
    elif case.group != "tensor" and "gen_index" not in case.name:
        assert case.flops > 0, "nominal FLOPs of arithmetic cases"


@pytest.mark.torch
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_torch_reference_matches_graph(case):
    torch = pytest.importorskip("torch", reason="PyTorch not installed")
    dtypes = runner._dtypes(torch)
    g = graph(case.name)
    inputs = [torch.empty_strided(t.dim, t.get_stride(), dtype=dtypes[t.get_data_type().mlir],
                                  device="meta") for t in g.inputs]
    if case.init is not None:
        case.init(torch, *inputs)
    prepared = tuple(case.torch_prepare(torch, *inputs)) if case.torch_prepare else ()
    for fn in [case.torch_fn, *case.others.values()]:
        results = fn(torch, *inputs, *prepared)
        results = list(results) if isinstance(results, (tuple, list)) else [results]
        assert 1 <= len(results) <= len(g.outputs)
        assert results[0] is not None
        for r, t in zip(results, g.outputs):
            if r is None:
                continue
            assert r.dtype == dtypes[t.get_data_type().mlir], t.name
            assert r.numel() == math.prod(t.dim), t.name
            assert [d for d in r.shape if d != 1] == [d for d in t.dim if d != 1], t.name


def test_only_selects_by_name_or_group():
    names = lambda only: {c.name for c in runner.select(CASES, only)}  # noqa: E731
    assert names(None) == names("") == set(IDS)
    assert names("conv") == {c.name for c in CASES if c.group == "conv"}
    assert names("CMP_*") == {c.name for c in CASES if c.name.startswith("cmp_")}
    assert names("*backward*") >= {c.name for c in CASES if c.group == "activation-backward"}
    assert names("softmax,matmul") == {c.name for c in CASES
                                       if c.group in ("softmax", "matmul")
                                       or "softmax" in c.name or "matmul" in c.name}
    assert names("no such case") == set()
    # A leading '=' takes the whole name only, not the twins it begins.
    base = "sdpa B16 H16 S1024 D128 bf16"
    assert base in IDS and names(base) > {base}
    assert names("=" + base) == {base}
    assert names("=SDPA B16 H16 S1024 D128 BF16, =no such case") == {base}


def test_rel_err():
    torch = pytest.importorskip("torch", reason="PyTorch not installed")
    inf = float("inf")
    got = torch.tensor([[1.0, -inf, 3.0]])
    assert runner._rel_err(torch, got, torch.tensor([1.0, -inf, 3.0])) == 0
    assert runner._rel_err(torch, got, torch.tensor([[1.0, -inf, 4.0]])) == pytest.approx(
        1 / math.sqrt(17))
    flags = torch.tensor([True, False, True, True])
    assert runner._rel_err(torch, flags, torch.tensor([True, True, True, True])) == 0.25
    with pytest.raises(ValueError, match="expected"):
        runner._rel_err(torch, got, torch.zeros(4))


class _Spec:
    def __init__(self, dims, dtype="f32"):
        self.dims, self.dtype = dims, dtype
        self.strides = [math.prod(dims[i + 1:]) for i in range(len(dims))]


class _Executable:
    """What the runner uses of a dnnc_runtime.Executable: gelu of one input."""

    inputs = [_Spec([4, 8])]
    outputs = [_Spec([4, 8])]

    def __init__(self, torch):
        self.torch = torch

    def __call__(self, x, outputs):
        outputs[0].copy_(self.torch.nn.functional.gelu(x))


def test_measure_on_cpu():
    torch = pytest.importorskip("torch", reason="PyTorch not installed")
    calls = []

    def bench(fn):
        fn()
        calls.append(fn)
        return 0.5 if len(calls) == 1 else 0.25

    good = cases.Case("gelu", None, lambda t, x, x2: t.nn.functional.gelu(x), 32, 256, True,
                      "pointwise", init=lambda t, x: x.abs_(),
                      torch_prepare=lambda t, x: (x * 2,))
    row = runner._measure(torch, bench, _Executable(torch), good, {"kernels": 1}, 1 << 20,
                          device="cpu")
    assert "error" not in row
    assert row["ratio"] == 2 and row["rel_err"] < 1e-6 and row["rel_errs"] == [row["rel_err"]]
    assert row["dnnc_tbs"] == pytest.approx(256 / 0.5 / 1e9)

    def broken(t, x):
        raise RuntimeError("no such kernel\nmore")

    bad = cases.Case("broken", None, broken, 32, 256, True, "pointwise")
    row = runner._measure(torch, bench, _Executable(torch), bad, {"kernels": 1}, 1 << 20,
                          device="cpu")
    assert row == {"case": "broken", "group": "pointwise", "stage": "torch",
                   "error": "RuntimeError: no such kernel"}
    assert runner._line(row, 4.0).endswith("ERROR (torch): RuntimeError: no such kernel")


def test_each_compiled_case_is_compiled_afresh(monkeypatch):
    """torch.compile recompiles the runner's one lambda for each case and
    runs it eagerly past dynamo's recompile limit: the runner clears dynamo's
    caches before compiling each case."""
    torch = pytest.importorskip("torch", reason="PyTorch not installed")
    events = []
    monkeypatch.setattr(torch._dynamo, "reset", lambda: events.append("reset"))
    monkeypatch.setattr(torch, "compile", lambda fn: events.append("compile") or fn)
    fused = cases.Case("gelu", None, lambda t, x: t.nn.functional.gelu(x), 32, 256, True,
                       "pointwise", compiled=True)
    for _ in range(3):
        row = runner._measure(torch, lambda fn: fn() or 0.25, _Executable(torch), fused,
                              {"kernels": 1}, 1 << 20, device="cpu")
        assert row["compile_ms"] == 0.25
    assert events == ["reset", "compile"] * 3


def test_memory_bound_line_gives_both_copy_shares():
    row = {"case": "reduce", "group": "reduction", "kernels": 1, "dnnc_ms": 0.025,
           "torch_ms": 0.035, "ratio": 1.4, "dnnc_tbs": 2.7, "torch_tbs": 1.9,
           "copy_same_tbs": 3.0, "rel_err": 1e-3}
    # 2.7 TB/s is 65% of a 4.15 TB/s large copy and 90% of the same bytes' copy.
    assert "2.70 TB/s  65%  90%" in runner._line(row, 4.15)
    del row["copy_same_tbs"]
    assert "2.70 TB/s  65%" in runner._line(row, 4.15)


def test_host_timing_counts_every_call():
    calls, syncs = [], []
    ms = runner.host_ms(lambda: calls.append(1), lambda: syncs.append(1), calls=10, rounds=3)
    assert len(calls) == 10 + 3 * 10 and len(syncs) == 1 + 3
    assert ms >= 0
    tiny = [c for c in CASES if c.host_timed]
    assert tiny and all(" tiny " in c.name for c in tiny)


class _Attention:
    """A stand-in executable of sdpa (PyTorch's math on the CPU)."""

    inputs = [_Spec([1, 2, 16, 8])] * 3
    outputs = [_Spec([1, 2, 16, 8])]

    def __init__(self, torch):
        self.torch = torch

    def __call__(self, q, k, v, outputs):
        outputs[0].copy_(self.torch.nn.functional.scaled_dot_product_attention(q, k, v))


def test_a_refused_variant_is_missing_not_an_error():
    """SDPA pinned to cuDNN attention refuses CPU tensors: its time is
    missing, the case is measured."""
    torch = pytest.importorskip("torch", reason="PyTorch not installed")
    times = iter([0.5, 0.25, 0.125])
    case = cases.Case("sdpa", None, lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(
                          q, k, v), 4 * 2 * 16 * 16 * 8, 4 * 2 * 16 * 8 * 4, False, "attention",
                      others={"copy": lambda t, q, k, v: q.clone(),
                              "cudnn": cases._sdpa_on("CUDNN_ATTENTION", False, False)})
    row = runner._measure(torch, lambda fn: fn() or next(times), _Attention(torch), case,
                          {"kernels": 1}, 1 << 20, device="cpu")
    assert "error" not in row
    assert (row["dnnc_ms"], row["torch_ms"], row["ratio"]) == (0.5, 0.25, 2)
    assert row["torch_copy_ms"] == 0.125 and "torch_copy_error" not in row
    assert row["torch_cudnn_ms"] is None and row["torch_cudnn_error"].startswith("RuntimeError")
    others = ["copy", "cudnn"]
    assert runner._header(others).endswith("     copy ms    cudnn ms")
    assert runner._line(row, 4.0, others).endswith("       0.125           -")
    assert runner._line(row, 4.0).endswith(f"{row['rel_err']:.1e}")  # no columns asked


def test_run_without_a_gpu(monkeypatch, capsys):
    torch = pytest.importorskip("torch", reason="PyTorch not installed")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    # Past the import of Triton (absent from CPU-only environments).
    monkeypatch.setitem(sys.modules, "triton", types.ModuleType("triton"))
    monkeypatch.setitem(sys.modules, "triton.testing", types.ModuleType("triton.testing"))
    args = argparse.Namespace(dir="nowhere", json=None, only="attention", traceback=False,
                              commit=None)
    assert runner.run(args) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


ATTENTION_FORWARD = [c for c in CASES if c.group == "attention" and c.others
                     and not c.name.startswith(("sdpa decode", "sdpa paged", "sdpa ragged",
                                                "sdpa backward"))]
ATTENTION_RAGGED = [c for c in CASES if c.name.startswith("sdpa ragged")]
ATTENTION_DECODE = [c for c in CASES if c.name.startswith("sdpa decode")]
ATTENTION_PAGED = [c for c in CASES if c.name.startswith("sdpa paged decode")]


def test_attention_paged_cases():
    """Paged decode: the decode floor (q, o, K and V once), caches of pages
    and int32 tables and lengths, in the order init and torch_prepare take
    them."""
    assert len(ATTENTION_PAGED) == 3
    for c in ATTENTION_PAGED:
        assert c.memory_bound and set(c.others) == {"flash"} and c.torch_prepare
        q, k, v, lq, lkv, kt, vt = graph(c.name).inputs
        (b, h, sq, d), (pages, hk, page, _) = q.dim, k.dim
        skv = int(re.search(r"Skv(\d+)", c.name).group(1))
        assert sq == 1 and v.dim == k.dim and f"page{page} " in c.name
        assert kt.dim == vt.dim == [b, 1, pages // b, 1] and pages * page >= skv
        assert {t.get_data_type().mlir for t in (lq, lkv, kt, vt)} == {"i32"}
        assert c.bytes == (2 * b * h * d + 2 * b * hk * skv * d) * 2
    assert "sdpa paged decode B8 GQA H32 KV8 Skv8192 D128 page64 bf16" in \
        {c.name for c in ATTENTION_PAGED}


def test_attention_paged_torch_side_matches_the_reference():
    """PyTorch's side of a small paged decode (init's random tables, the
    untimed gather, SDPA's math on the CPU) against the dnnc reference of
    the same graph and inputs: the gather is the op's paging."""
    torch = pytest.importorskip("torch", reason="PyTorch not installed")
    import numpy as np
    b, h, hk, skv, d, page = 2, 4, 2, 100, 16, 16
    build, init, gather = cases._sdpa_paged_decode(b, h, hk, skv, d, page)
    g = build()
    torch.manual_seed(0)
    tensors = []
    for t in g.inputs:
        x = torch.randn(t.dim)
        # The graph's bf16 values, held in f32 for SDPA's math on the CPU.
        tensors.append(x.to(torch.int32) if t.get_data_type().mlir == "i32"
                       else x.to(torch.bfloat16).float())
    init(torch, *tensors)
    k_full, v_full = gather(torch, *tensors)
    fn = cases._sdpa_on_gathered("MATH", True)
    got = fn(torch, *tensors, k_full, v_full)
    values = {t.name: x.numpy() for t, x in zip(g.inputs, tensors)}
    want = g.execute_reference(values)[g.outputs[0].name]  # rounded to bf16
    np.testing.assert_allclose(got.double().numpy(), want, rtol=8e-3, atol=1e-3)


def test_attention_ragged_cases():
    """B8 packed sequences of varying lengths, H16 D128, causal and not:
    the offsets and lengths, then q, k and v packed (strides [S H D, D,
    H D, 1]), in the order init and torch_prepare take them; FLOPs of each
    sequence's own length."""
    assert {c.name for c in ATTENTION_RAGGED} == {"sdpa ragged B8 H16 S4096 D128 bf16",
                                                 "sdpa ragged causal B8 H16 S4096 D128 bf16"}
    for c in ATTENTION_RAGGED:
        assert set(c.others) == {"varlen", "cudnn_padded"} and c.torch_prepare and c.init
        off, lens, q, k, v = graph(c.name).inputs
        assert off.dim == [9, 1, 1, 1] and lens.dim == [8, 1, 1, 1]
        assert q.get_stride() == [4096 * 16 * 128, 128, 16 * 128, 1]
        assert q.get_ragged_offset() is off and v.get_ragged_offset() is off
        lengths = cases.RAGGED_LENGTHS
        causal = 2 if "causal" in c.name else 1
        assert c.flops == sum(4 * 16 * n * n * 128 / causal for n in lengths)


def test_attention_ragged_torch_side_matches_the_reference():
    """PyTorch's side of a small ragged case, the varlen kernel replaced by
    SDPA's math per sequence (varlen runs on CUDA only), through the same
    init, prepare and index_copy, against the dnnc reference of the graph."""
    torch = pytest.importorskip("torch", reason="PyTorch not installed")
    import numpy as np
    lengths, h, d = (5, 0, 9, 3), 2, 16
    build, init, prepare = cases._sdpa_ragged(h, d, True, lengths)
    g = build()
    torch.manual_seed(0)
    tensors = []
    for t in g.inputs:
        if t.get_data_type().mlir == "i32":
            tensors.append(torch.zeros(t.dim, dtype=torch.int32))
        else:
            x = torch.empty_strided(t.dim, t.get_stride())
            x.copy_(torch.randn(t.dim).to(torch.bfloat16).float())
            tensors.append(x)
    init(torch, *tensors)
    qr, kr, vr, cu, at, padded, *_ = prepare(torch, *tensors)
    rows = []
    for i, n in enumerate(lengths):
        a, z = int(cu[i]), int(cu[i + 1])
        x = [y[a:z].transpose(0, 1) for y in (qr, kr, vr)]
        rows.append(torch.nn.functional.scaled_dot_product_attention(*x, is_causal=True)
                    .transpose(0, 1))
    padded.index_copy_(0, at, torch.cat(rows))
    got = padded.view(len(lengths), max(lengths), h, d).permute(0, 2, 1, 3)
    values = {t.name: x.numpy() for t, x in zip(g.inputs, tensors)}
    want = g.execute_reference(values)[g.outputs[0].name]
    np.testing.assert_allclose(got.double().numpy(), want, rtol=8e-3, atol=1e-3)


def test_attention_decode_cases():
    """One query row a head against 8k to 128k keys, memory-bound: the
    floor is q, o, K and V moved once."""
    assert len(ATTENTION_DECODE) == 4
    for c in ATTENTION_DECODE:
        assert c.memory_bound and set(c.others) == {"flash"}
        q, k, v = graph(c.name).inputs
        (b, h, sq, d), (_, hk, skv, _) = q.dim, k.dim
        assert sq == 1 and skv >= 8192 and v.dim == k.dim
        assert c.bytes == (2 * b * h * d + 2 * b * hk * skv * d) * 2
        assert c.flops == 4 * b * h * skv * d


def test_attention_forward_cases():
    names = {c.name for c in ATTENTION_FORWARD}
    for shape in ["B4 H16 S4096 D128", "B4 H16 S4096 D64", "B4 H16 S4096 D256",
                  "B16 H16 S1024 D128", "B8 H16 S2048 D128", "B2 H16 S8192 D128",
                  "B1 H16 S16384 D128", "B1 GQA H64 KV8 S8192 D128",
                  "B1 GQA H64 KV8 S16384 D128"]:
        assert {f"sdpa {shape} bf16", f"sdpa causal {shape} bf16"} <= names
    assert "sdpa B4 H16 S4096 D128 f16" in names and len(names) == 38
    # The Ampere kernel forced on the S4096 D128 pair and D64.
    forced = {c.name: c.config for c in ATTENTION_FORWARD
              if c.config and c.name.endswith(" tc-sm80")}
    assert set(forced) == {"sdpa B4 H16 S4096 D128 bf16 tc-sm80",
                           "sdpa causal B4 H16 S4096 D128 bf16 tc-sm80",
                           "sdpa B4 H16 S4096 D64 bf16 tc-sm80"}
    assert all(c.startswith("*=strategy:tc-sm80,") for c in forced.values())
    # The persistent forward and a block a tile, both forced, beside the
    # case of the same graph (the causal S1024 D64 one the original set's).
    twins = {" persistent": "*=persistent:1", " block-a-tile": "*=persistent:0"}
    for suffix, config in twins.items():
        formed = {c.name[:-len(suffix)]: c for c in ATTENTION_FORWARD if c.name.endswith(suffix)}
        assert len(formed) == 8 and {c.config for c in formed.values()} == {config}
        assert "sdpa causal B4 H16 S1024 D64 bf16" in formed
        assert {"sdpa B16 H16 S1024 D128 bf16", "sdpa causal B1 GQA H64 KV8 S8192 D128 bf16"} \
            <= set(formed)
        for name, c in formed.items():
            base = next(x for x in cases.CASES if x.name == name)
            assert base.config is None and (c.flops, c.bytes) == (base.flops, base.bytes)
    for c in ATTENTION_FORWARD:
        assert set(c.others) == {"flash"} and not c.memory_bound
        g = graph(c.name)
        q, k, _ = g.inputs
        (b, h, s, d), hk = q.dim, k.dim[1]
        assert c.flops == 4 * b * h * s * s * d / (2 if "causal" in c.name else 1)
        assert c.bytes == (2 * b * h + 2 * b * hk) * s * d * 2
    # The S4096 D128 pair of the reference figures: 0.892 / 0.506 ms on cuDNN.
    pair = {c.name: c.flops for c in ATTENTION_FORWARD if "B4 H16 S4096 D128 bf16" in c.name}
    assert pair["sdpa B4 H16 S4096 D128 bf16"] == 2 * pair["sdpa causal B4 H16 S4096 D128 bf16"]


def test_attention_backward_fused_form_cases():
    """Each backward case beside its fused kernel's other forms, named after
    it: a block a unit (persistent:0) for every shape, the group's heads in
    as many parts as it has for the GQA shape; same graph, FLOPs, bytes."""
    twins = {" block-a-unit": "*=persistent:0", " 8-parts": "*=split:8"}
    formed = {c.name: c for c in cases.ATTENTION_BACKWARD
              if any(c.name.endswith(s) for s in twins)}
    assert len([n for n in formed if n.endswith(" block-a-unit")]) == 8
    assert {n for n in formed if n.endswith(" 8-parts")} == {
        f"sdpa backward{causal} B1 GQA H64 KV8 S8192 D128 bf16 8-parts"
        for causal in ("", " causal")}
    for name, c in formed.items():
        suffix = next(s for s in twins if name.endswith(s))
        assert c.config == twins[suffix]
        twin = next(x for x in cases.ATTENTION_BACKWARD if x.name == name[:-len(suffix)])
        assert twin.config is None and (c.flops, c.bytes) == (twin.flops, twin.bytes)
        assert graph(name).to_mlir() == graph(twin.name).to_mlir()


def test_attention_backward_dq_summed_cases():
    """D 64's backward with its consumers' dQ parts summed in shared memory
    (staged:1), persistent and a block a unit, each named after its
    default twin: same graph, FLOPs, bytes."""
    twins = {" block-a-unit dq-summed": "*=persistent:0,staged:1", " dq-summed": "*=staged:1"}
    summed = {c.name: c for c in cases.ATTENTION_BACKWARD if c.name.endswith(" dq-summed")}
    assert set(summed) == {f"sdpa backward{causal} B4 H16 S4096 D64 bf16{form} dq-summed"
                           for causal in ("", " causal") for form in ("", " block-a-unit")}
    for name, c in summed.items():
        suffix = next(s for s in twins if name.endswith(s))
        assert c.config == twins[suffix]
        twin = next(x for x in cases.ATTENTION_BACKWARD if x.name == name[:-len(suffix)])
        assert twin.config is None and (c.flops, c.bytes) == (twin.flops, twin.bytes)
        assert graph(name).to_mlir() == graph(twin.name).to_mlir()


def test_attention_backward_tc_sm80_cases():
    """The Ampere backward forced on the S4096 D128 and D64 pairs, its two
    kernels (fused:0) and its fused kernel (fused:1), each named after its
    default twin, which has the same graph."""
    for suffix, fused in ((" tc-sm80", 0), (" tc-sm80 fused", 1)):
        forced = {c.name: c for c in cases.ATTENTION_BACKWARD if c.name.endswith(suffix)}
        assert set(forced) == {f"sdpa backward{causal} B4 H16 S4096 D{d} bf16{suffix}"
                               for d in (128, 64) for causal in ("", " causal")}
        for name, c in forced.items():
            assert c.config == f"*=strategy:tc-sm80,fused:{fused}"
            twin = next(x for x in cases.ATTENTION_BACKWARD if x.name == name[:-len(suffix)])
            assert (c.flops, c.bytes) == (twin.flops, twin.bytes)
            assert graph(name).to_mlir() == graph(twin.name).to_mlir()
    four = {c.name: c for c in cases.ATTENTION_BACKWARD
            if c.name.endswith(" tc-sm80 fused 4-warps")}
    assert {c.config for c in four.values()} == {
        f"*=strategy:tc-sm80,fused:1,tile:64x{m},block:128,stages:3" for m in (32, 64)}
    assert len(four) == 4
    # The two kernels are timed beside FlashAttention-2's backward (PyTorch's
    # flash backend, the same mma.sync), the fused ones not.
    for c in cases.ATTENTION_BACKWARD:
        assert set(c.others) == ({"flash"} if c.name.endswith(" tc-sm80") else set()), c.name
    # Their other tiles (D128): stages, a dQ step of 32, 4 warps.
    tiles = {c.name: c.config for c in cases.ATTENTION_BACKWARD
             if " tc-sm80 " in c.name and "fused" not in c.name}
    assert tiles == {f"sdpa backward B4 H16 S4096 D128 bf16 tc-sm80 {label}":
                     f"*=strategy:tc-sm80,fused:0,{extra}" for label, extra in (
                         ("stages 3", "stages:3"), ("stages 4", "stages:4"),
                         ("tile 32x32", "tile:32x32"),
                         ("tile 64x32 block 128", "tile:64x32,block:128"))}
