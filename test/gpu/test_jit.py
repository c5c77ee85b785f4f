"""The JIT on a real GPU: ``Graph.compile(target="cuda")`` detects the arch,
compiles through the on-disk cache, and the Executable it returns computes
what PyTorch does.

Four graphs, one per kind of kernel: conv + bias + relu (NHWC, bf16), matmul +
bias + gelu (f16), layernorm (f32) and causal attention (bf16). Inputs are
random, in the layouts the graphs declare (the NHWC tensors really are
channels-last in memory); outputs are passed with ``outputs=`` pre-filled with
NaN, so an element no kernel writes fails the comparison. The reference is
torch.nn.functional on the same (rounded) inputs in float64, and the
tolerances below are per output dtype: about two rounding steps of the output
type (bf16 keeps 8 bits, f16 11), plus f32 accumulation over the reduced dim.

A second compile of the same graph must be a cache hit (the cache's stats
count it) and must give the same results.

Needs the MLIR bindings (the JIT compiles here), PyTorch with CUDA and a GPU
of arch sm_80 or sm_90a; the folder's conftest marks every test ``gpu`` and
skips them all without a GPU.
"""

import math

import pytest

try:
    import mlir  # noqa: F401
except ImportError as err:
    pytest.skip(f"the MLIR bindings are not installed ({err}): the JIT compiles on this "
                "machine", allow_module_level=True)

torch = pytest.importorskip("torch")
F = torch.nn.functional

import dnnc  # noqa: E402
from dnnc import cache, compiler  # noqa: E402
from dnnc.dialect.types import data_type as dt  # noqa: E402

# (rtol, atol) by output dtype.
TOLERANCES = {
    torch.bfloat16: (1.6e-2, 1.6e-2),   # 2^-8 relative step, twice
    torch.float16: (2e-3, 2e-3),        # 2^-11 relative step, four times
    torch.float32: (1e-4, 1e-4),        # f32 sums over a few hundred elements
}
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def _channels_last(dims):
    """Element strides of logical NCHW dims laid out as NHWC."""
    n, c, h, w = dims
    return [h * w * c, 1, w * c, c]


def _randn(shape, dtype, gen, scale=1.0, shift=0.0):
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * scale + shift).to(dtype)


# -- the graphs, their inputs and their references -----------------------------

N, C, H, W, K = 2, 16, 10, 12, 32


def conv_bias_relu():
    g = dnnc.Graph(name="conv_bias_relu", io_data_type=dt.BFLOAT16)
    x = g.tensor(name="x", dim=[N, C, H, W], stride=_channels_last([N, C, H, W]))
    w = g.tensor(name="w", dim=[K, C, 3, 3], stride=_channels_last([K, C, 3, 3]))
    b = g.tensor(name="b", dim=[1, K, 1, 1])
    y = g.relu(g.add(g.conv_fprop(x, w, padding=[1, 1]), b))
    y.set_output(True).set_name("y").set_stride(_channels_last([N, K, H, W]))
    return g


def conv_bias_relu_inputs(gen):
    # Made NHWC, then viewed as NCHW: the logical dims with channels-last strides.
    x = _randn([N, H, W, C], torch.bfloat16, gen).permute(0, 3, 1, 2)
    w = _randn([K, 3, 3, C], torch.bfloat16, gen, scale=1 / math.sqrt(9 * C)).permute(0, 3, 1, 2)
    return {"x": x, "w": w, "b": _randn([1, K, 1, 1], torch.bfloat16, gen)}


def conv_bias_relu_reference(x, w, b):
    return {"y": F.relu(F.conv2d(x, w, bias=b.reshape(K), padding=1))}


M, KD, ND = 64, 96, 128


def matmul_bias_gelu():
    g = dnnc.Graph(name="matmul_bias_gelu", io_data_type=dt.HALF)
    a = g.tensor(name="a", dim=[M, KD])
    b = g.tensor(name="b", dim=[KD, ND])
    bias = g.tensor(name="bias", dim=[1, ND])
    g.gelu(g.add(g.matmul(a, b), bias)).set_output(True).set_name("y")
    return g


def matmul_bias_gelu_inputs(gen):
    return {"a": _randn([M, KD], torch.float16, gen),
            "b": _randn([KD, ND], torch.float16, gen, scale=1 / math.sqrt(KD)),
            "bias": _randn([1, ND], torch.float16, gen)}


def matmul_bias_gelu_reference(a, b, bias):
    return {"y": F.gelu(a @ b + bias, approximate="none")}


ROWS, COLS = 48, 384


def layernorm():
    g = dnnc.Graph(name="layernorm", io_data_type=dt.FLOAT)
    x = g.tensor(name="x", dim=[ROWS, COLS])
    scale = g.tensor(name="scale", dim=[1, COLS])
    bias = g.tensor(name="bias", dim=[1, COLS])
    y, _, _ = g.layernorm(x, scale, bias, epsilon=1e-5, axis=1)
    y.set_output(True).set_name("y")
    return g


def layernorm_inputs(gen):
    # An offset mean, so that a variance computed carelessly loses digits.
    return {"x": _randn([ROWS, COLS], torch.float32, gen, scale=2.0, shift=3.0),
            "scale": _randn([1, COLS], torch.float32, gen),
            "bias": _randn([1, COLS], torch.float32, gen)}


def layernorm_reference(x, scale, bias):
    return {"y": F.layer_norm(x, (COLS,), scale.reshape(COLS), bias.reshape(COLS), eps=1e-5)}


B, HEADS, SEQ, D = 2, 4, 80, 32


def sdpa_causal():
    g = dnnc.Graph(name="sdpa_causal", io_data_type=dt.BFLOAT16)
    q, k, v = (g.tensor(name=n, dim=[B, HEADS, SEQ, D]) for n in "qkv")
    o, _ = g.sdpa(q, k, v, use_causal_mask=True)
    o.set_output(True).set_name("o")
    return g


def sdpa_causal_inputs(gen):
    return {n: _randn([B, HEADS, SEQ, D], torch.bfloat16, gen) for n in "qkv"}


def sdpa_causal_reference(q, k, v):
    # Written out (not F.scaled_dot_product_attention) so float64 works on every backend.
    s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
    s = s.masked_fill(torch.ones(SEQ, SEQ, dtype=torch.bool, device=s.device).triu(1),
                      float("-inf"))
    return {"o": torch.softmax(s, dim=-1) @ v}


CASES = {
    "conv_bias_relu_nhwc_bf16": (conv_bias_relu, conv_bias_relu_inputs,
                                 conv_bias_relu_reference),
    "matmul_bias_gelu_f16": (matmul_bias_gelu, matmul_bias_gelu_inputs,
                             matmul_bias_gelu_reference),
    "layernorm_f32": (layernorm, layernorm_inputs, layernorm_reference),
    "sdpa_causal_bf16": (sdpa_causal, sdpa_causal_inputs, sdpa_causal_reference),
}


# -- the test ------------------------------------------------------------------

def _nan_outputs(exe):
    """One NaN-filled CUDA tensor per output, with the manifest's dims and strides."""
    outs = {}
    for spec in exe.outputs:
        t = torch.empty_strided(spec.dims, spec.strides, dtype=TORCH_DTYPES[spec.dtype],
                                device="cuda")
        outs[spec.name] = t.fill_(float("nan"))
    return outs


def _run_and_check(exe, inputs, expected):
    outs = _nan_outputs(exe)
    exe(**inputs, outputs=outs)
    torch.cuda.synchronize()
    for name, want in expected.items():
        got = outs[name]
        rtol, atol = TOLERANCES[got.dtype]
        torch.testing.assert_close(got.double(), want, rtol=rtol, atol=atol,
                                   msg=lambda m: f"output '{name}': {m}")


@pytest.fixture
def jit_cache(tmp_path, monkeypatch):
    """A cache of this test's own, so the first compile is a miss."""
    monkeypatch.setenv("DNNC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DNNC_DUMP_IR", raising=False)
    return cache.default()


@pytest.mark.parametrize("case", list(CASES))
def test_jit_matches_torch_and_hits_the_cache(case, jit_cache):
    build, make_inputs, reference = CASES[case]
    if not torch.cuda.is_available():
        pytest.skip("PyTorch was built without CUDA")
    gen = torch.Generator().manual_seed(0)
    inputs = {name: t.to("cuda") for name, t in make_inputs(gen).items()}  # keeps strides
    expected = reference(**{name: t.double() for name, t in inputs.items()})

    exe = build().compile(target="cuda")
    assert exe.arch == compiler.detect_arch()
    assert (jit_cache.stats.hits, jit_cache.stats.writes) == (0, 1)
    for spec in exe.inputs:
        assert list(inputs[spec.name].stride()) == list(spec.strides), spec.name
    _run_and_check(exe, inputs, expected)

    again = build().compile(target="cuda")  # a new Graph object, the same graph
    assert (jit_cache.stats.hits, jit_cache.stats.writes) == (1, 1)
    _run_and_check(again, inputs, expected)


# -- many processes, one cache -----------------------------------------------------

PROCESSES = 16


def _jit_in_child(directory, case, barrier, results):
    """One process: JIT-compile ``case`` into the shared cache ``directory``,
    all at once with the others (the barrier), run it and check it."""
    import hashlib
    import os

    os.environ["DNNC_CACHE_DIR"] = directory
    try:
        build, make_inputs, reference = CASES[case]
        gen = torch.Generator().manual_seed(os.getpid())
        inputs = {name: t.to("cuda") for name, t in make_inputs(gen).items()}
        expected = reference(**{name: t.double() for name, t in inputs.items()})
        graph = build()
        barrier.wait(timeout=300)
        exe = graph.compile(target="cuda")
        _run_and_check(exe, inputs, expected)
        results.put(("ok", hashlib.sha256(exe.artifact.ptx.encode()).hexdigest()))
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        results.put(("error", repr(err)))


def test_processes_compiling_one_graph_at_once_share_one_cache_entry(tmp_path):
    """PROCESSES processes JIT-compile the same graph into one cache at the
    same moment: each gets correct results on its own inputs and the same
    PTX, and the cache holds one valid entry (no temp file left)."""
    import multiprocessing
    import os

    if not torch.cuda.is_available():
        pytest.skip("PyTorch was built without CUDA")
    directory = tmp_path / "cache"
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=_jit_in_child,
                         args=(str(directory), "matmul_bias_gelu_f16", barrier, results))
             for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    try:
        outcomes = [results.get(timeout=600) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
    assert [status for status, _ in outcomes] == ["ok"] * PROCESSES, outcomes
    assert len({ptx for _, ptx in outcomes}) == 1, outcomes    # one package for all
    # Beside the entry, only the memo directory of the sources' digest.
    names = sorted(set(os.listdir(directory)) - {cache.SOURCE_MEMO_DIR})
    assert len(names) == 1 and names[0].endswith(cache.ENTRY_SUFFIX), names   # no temp left
    key = names[0][:-len(cache.ENTRY_SUFFIX)]
    assert cache.recorded_key((directory / names[0]).read_bytes()) == key


def test_runtime_scalars_change_per_call_on_one_executable():
    """A bf16 matmul scaled by a runtime scalar (tc-sm90 / tc-sm80 epilogue)
    and an rmsnorm with a runtime epsilon (a row program): one JIT compile,
    called with several values through both of the runtime's paths (the
    general one: NumPy and names; the fast one: torch tensors in order, after
    the first call), each checked against torch in float64."""
    if not torch.cuda.is_available():
        pytest.skip("PyTorch was built without CUDA")
    g = dnnc.Graph(io_data_type=dt.BFLOAT16)
    a = g.tensor(name="a", dim=[256, 192])
    b = g.tensor(name="b", dim=[192, 320])
    x = g.tensor(name="x", dim=[64, 1024])
    s, eps = g.scalar(name="s"), g.scalar(name="eps")
    g.mul(g.matmul(a, b), s).set_output(True).set_name("y")
    g.rmsnorm(x, epsilon=eps)[0].set_output(True).set_name("r")
    exe = g.compile(target="cuda", cache=False)
    gen = torch.Generator().manual_seed(7)
    av, bv = _randn([256, 192], torch.bfloat16, gen), _randn([192, 320], torch.bfloat16, gen)
    xv = _randn([64, 1024], torch.bfloat16, gen, scale=0.02)    # small: epsilon matters
    ins = [t.to("cuda") for t in (av, bv, xv)]
    rtol, atol = TOLERANCES[torch.bfloat16]
    for call, (sv, ev) in enumerate(((0.5, 1e-5), (-3.0, 0.25), (2.0, 1e-2), (0.5, 1e-5))):
        y = torch.full((256, 320), float("nan"), dtype=torch.bfloat16, device="cuda")
        r = torch.full((64, 1024), float("nan"), dtype=torch.bfloat16, device="cuda")
        if call == 1:
            exe(a=ins[0], b=ins[1], x=ins[2], s=sv, eps=ev, outputs={"y": y, "r": r})
        else:
            exe(*ins, sv, ev, outputs=[y, r])
        torch.cuda.synchronize()
        y_ref = (av.double() @ bv.double()) * sv
        xd = xv.double()
        r_ref = xd * torch.rsqrt((xd * xd).mean(dim=1, keepdim=True) + ev)
        torch.testing.assert_close(y.cpu().double(), y_ref, rtol=rtol, atol=atol * 4)
        torch.testing.assert_close(r.cpu().double(), r_ref, rtol=rtol, atol=atol)
    assert exe._relaunch is not None          # the fast path served the later calls
    import dnnc_runtime

    with pytest.raises(dnnc_runtime.ArgumentError, match=r"input 's': expected a number .* "
                                                         r"a tensor on cuda"):
        exe(*ins, torch.tensor(1.0, device="cuda"), 1e-5)
