"""dnnc.frontend on a real GPU: cudnn-frontend-style graphs executed on torch
CUDA tensors through the JIT and the runtime, against torch.

Covers what the CPU tests cannot: the runtime binding of the caller's
buffers (torch tensors, raw device pointers from ``data_ptr()``, buffers
of other dims taken as storage), the stream set with ``set_stream``, output
layouts (channels-last in, channels-last out) checked by the runtime, and a
serialized plan run after ``deserialize``. Outputs start as NaN, so an
element nothing writes fails.

Needs the MLIR bindings (the JIT compiles here), PyTorch with CUDA and a GPU
of arch sm_80 or sm_90a; the folder's conftest skips it without a GPU.
"""

import pytest

try:
    import mlir  # noqa: F401
except ImportError as err:
    pytest.skip(f"the MLIR bindings are not installed ({err}): the JIT compiles on this "
                "machine", allow_module_level=True)

torch = pytest.importorskip("torch")
F = torch.nn.functional

import dnnc.frontend as cudnn  # noqa: E402


def _nan_like(t):
    return torch.full_like(t, float("nan"))


def _build(g):
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()


@pytest.fixture
def handle():
    h = cudnn.create_handle()
    stream = torch.cuda.Stream()
    cudnn.set_stream(handle=h, stream=stream.cuda_stream)
    yield h, stream
    cudnn.destroy_handle(h)


def test_layernorm_rows_bf16_on_a_set_stream(handle):
    h, stream = handle
    torch.manual_seed(0)
    N, C = 2048, 768
    x = (3 * torch.randn(N, C, 1, 1, device="cuda", dtype=torch.bfloat16) - 0.5) \
        .to(memory_format=torch.channels_last)
    scale = torch.randn(1, C, 1, 1, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(1, C, 1, 1, device="cuda", dtype=torch.bfloat16)
    eps = torch.full((1, 1, 1, 1), 1e-5)
    g = cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=h)
    X = g.tensor(name="X", dim=x.size(), stride=x.stride(), data_type=x.dtype)
    S = g.tensor_like(scale)
    B = g.tensor_like(bias)
    E = g.tensor(name="eps", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], is_pass_by_value=True,
                 data_type=torch.float32)
    Y, mean, inv = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=X,
                               scale=S, bias=B, epsilon=E)
    Y.set_output(True).set_data_type(x.dtype)
    mean.set_output(True).set_data_type(torch.float32)
    inv.set_output(True).set_data_type(torch.float32)
    _build(g)
    y = _nan_like(x)
    m = torch.full((N, 1, 1, 1), float("nan"), device="cuda")
    iv = torch.full((N, 1, 1, 1), float("nan"), device="cuda")
    torch.cuda.synchronize()
    g.execute({X: x, S: scale, B: bias, E: eps, Y: y, mean: m, inv: iv}, None, handle=h)
    stream.synchronize()
    xf = x.double()
    ref = F.layer_norm(xf, [C, 1, 1], scale.double()[0], bias.double()[0], 1e-5)
    torch.testing.assert_close(y.double(), ref, atol=3e-2, rtol=1.6e-2)
    torch.testing.assert_close(m.double(), xf.mean(dim=(1, 2, 3), keepdim=True),
                               atol=1e-4, rtol=1e-4)
    assert "cuda" == g._last_plan.target


def test_conv_bias_relu_through_jit_with_uids_and_raw_pointers(handle):
    h, stream = handle
    torch.manual_seed(1)
    x = torch.randn(4, 32, 17, 17, device="cuda", dtype=torch.float16) \
        .to(memory_format=torch.channels_last)
    w = torch.randn(64, 32, 3, 3, device="cuda", dtype=torch.float16) \
        .to(memory_format=torch.channels_last) * 0.1
    b = torch.randn(1, 64, 1, 1, device="cuda", dtype=torch.float16)

    @cudnn.jit(heur_modes=[cudnn.heur_mode.A])
    def make(handle, x, w, b):
        with cudnn.graph(handle) as (g, _):
            X, W, B = g.tensor_like(x), g.tensor_like(w), g.tensor_like(b)
            conv = g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1],
                                dilation=[1, 1])
            Y = g.relu(input=g.bias(input=conv, bias=B), lower_clip=0.5, upper_clip=1.5)
            Y.set_output(True)
        return g, [X, W, B, Y]

    g, (xu, wu, bu, yu) = make(h, x, w, b)
    y = torch.full((4, 64, 17, 17), float("nan"), device="cuda", dtype=torch.float16) \
        .to(memory_format=torch.channels_last)
    torch.cuda.synchronize()
    g.execute({xu: x.data_ptr(), wu: w, bu: b, yu: y.data_ptr()}, None, handle=h)
    stream.synchronize()
    ref = torch.clamp(F.conv2d(x.float(), w.float(), padding=1) + b.float(), 0.5, 1.5)
    torch.testing.assert_close(y.float(), ref, atol=4e-3, rtol=2e-3)

    data = g.serialize()
    g2 = cudnn.pygraph(handle=h)
    g2.deserialize(data)
    y2 = _nan_like(y)
    torch.cuda.synchronize()
    g2.execute({xu: x, wu: w, bu: b, yu: y2}, None, handle=h)
    stream.synchronize()
    torch.testing.assert_close(y2, y)


def test_reduction_into_a_buffer_of_other_dims(handle):
    h, stream = handle
    x = torch.randn(4, 16, 8, 8, device="cuda").to(memory_format=torch.channels_last)
    g = cudnn.pygraph(io_data_type=cudnn.data_type.FLOAT, handle=h)
    X = g.tensor_like(x)
    Y = g.reduction(X, mode=cudnn.reduction_mode.ADD)
    Y.set_output(True).set_dim([4, 1, 8, 8])
    _build(g)
    y = torch.full((4, 8, 8), float("nan"), device="cuda")   # cuDNN takes pointers
    torch.cuda.synchronize()
    g.execute({X: x, Y: y}, None, handle=h)
    stream.synchronize()
    torch.testing.assert_close(y, x.sum(dim=1), atol=1e-5, rtol=1e-5)


def test_conv_int8_into_a_larger_int32_buffer(handle):
    """cudnn-frontend's test_conv_int8 graph on the GPU (int8 channels-last
    tensors, int32 compute, identity to an int32 output written into an
    int32 buffer of the image's dims), exact against torch's float64
    convolution of the same integers on the CPU (exact below 2^53)."""
    h, stream = handle
    torch.manual_seed(2)
    x = torch.randint(-127, 128, (2, 64, 32, 32), device="cuda", dtype=torch.int8) \
        .to(memory_format=torch.channels_last)
    w = torch.randint(-127, 128, (4, 64, 3, 3), device="cuda", dtype=torch.int8) \
        .to(memory_format=torch.channels_last)
    with cudnn.graph(h, io_data_type=cudnn.data_type.INT8,
                     intermediate_data_type=cudnn.data_type.INT32,
                     compute_data_type=cudnn.data_type.INT32) as (g, _):
        X, W = g.tensor_like(x), g.tensor_like(w)
        conv = g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
        Y = g.identity(input=conv)
        Y.set_output(True).set_data_type(cudnn.data_type.INT32)
    _build(g)
    y = torch.full(x.size(), -7, device="cuda", dtype=torch.int32) \
        .to(memory_format=torch.channels_last)
    torch.cuda.synchronize()
    g.execute({X: x, W: w, Y: y}, None, handle=h)
    stream.synchronize()
    got = y.permute(0, 2, 3, 1).reshape(-1)[:2 * 32 * 32 * 4].reshape(2, 32, 32, 4) \
        .permute(0, 3, 1, 2)
    ref = F.conv2d(x.cpu().double(), w.cpu().double(), padding=1).to(torch.int32)
    assert torch.equal(got.cpu(), ref)


@pytest.mark.parametrize("mma", [torch.bfloat16, torch.float16, torch.float32])
def test_int8_operands_cast_for_a_matmul(handle, mma):
    """test_mixed_precision_matmul's int8 form: A int8, B int8 stored
    column-major, both cast to the MMA type by identity."""
    h, stream = handle
    torch.manual_seed(3)
    a = torch.randint(4, (16, 32, 128), device="cuda", dtype=torch.int8) - 1
    b = torch.as_strided(torch.randint(3, (16, 128, 64), device="cuda", dtype=torch.int8) - 2,
                         (16, 128, 64), (128 * 64, 1, 128))
    mma_type = {torch.bfloat16: cudnn.data_type.BFLOAT16, torch.float16: cudnn.data_type.HALF,
                torch.float32: cudnn.data_type.FLOAT}[mma]
    g = cudnn.pygraph(handle=h)
    A, B = g.tensor_like(a), g.tensor_like(b)
    Ac = g.identity(input=A, compute_data_type=cudnn.data_type.FLOAT)
    Ac.set_data_type(mma_type)
    Bc = g.identity(input=B, compute_data_type=cudnn.data_type.FLOAT)
    Bc.set_data_type(mma_type)
    C = g.matmul(A=Ac, B=Bc, compute_data_type=cudnn.data_type.FLOAT)
    C.set_output(True).set_data_type(mma_type)
    _build(g)
    c = torch.full((16, 32, 64), float("nan"), device="cuda", dtype=mma)
    torch.cuda.synchronize()
    g.execute({A: a, B: b, C: c}, None, handle=h)
    stream.synchronize()
    ref = torch.matmul(a.cpu().double(), b.cpu().double()).to(mma)
    assert torch.equal(c.cpu(), ref)


def test_steady_execute_follows_new_buffers_values_and_streams(handle):
    """After the first execute, calls with the plan's tensors take the fast
    path (execute.Steady -> Executable.run_steady): new buffers each call,
    on the handle's stream and on torch's current one, must give new
    results; a new epsilon (a runtime scalar: a kernel argument) is served
    by the same plan on the fast path; a bad dtype is still refused."""
    h, stream = handle
    torch.manual_seed(1)
    N, C = 512, 1024
    g = cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=h)
    cl = [C, 1, C, C]
    X = g.tensor(name="X", dim=[N, C, 1, 1], stride=cl, data_type=torch.bfloat16)
    S = g.tensor(name="S", dim=[1, C, 1, 1], stride=cl, data_type=torch.bfloat16)
    B = g.tensor(name="B", dim=[1, C, 1, 1], stride=cl, data_type=torch.bfloat16)
    E = g.tensor(name="eps", dim=[1, 1, 1, 1], is_pass_by_value=True, data_type=torch.float32)
    Y, mean, inv = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=X,
                               scale=S, bias=B, epsilon=E)
    Y.set_output(True).set_data_type(torch.bfloat16)
    mean.set_output(True).set_data_type(torch.float32)
    inv.set_output(True).set_data_type(torch.float32)
    _build(g)

    def call(eps, on_handle, by_uid=False):
        x = (2 * torch.randn(N, C, 1, 1, device="cuda") + 1).to(torch.bfloat16) \
            .to(memory_format=torch.channels_last)
        s = torch.randn(1, C, 1, 1, device="cuda").to(torch.bfloat16)
        b = torch.randn(1, C, 1, 1, device="cuda").to(torch.bfloat16)
        y = _nan_like(x)
        m = torch.full((N, 1, 1, 1), float("nan"), device="cuda")
        iv = torch.full((N, 1, 1, 1), float("nan"), device="cuda")
        pack = {X: x, S: s, B: b, E: torch.full((1, 1, 1, 1), eps), Y: y, mean: m, inv: iv}
        if by_uid:
            pack = {t.get_uid(): v for t, v in pack.items()}
        torch.cuda.synchronize()
        if on_handle:
            g.execute(pack, None, handle=h)
            stream.synchronize()
        else:
            g.execute(pack, None)
            torch.cuda.synchronize()
        xf = x.double()
        ref = F.layer_norm(xf, [C, 1, 1], s.double()[0], b.double()[0], eps)
        torch.testing.assert_close(y.double(), ref, atol=3e-2, rtol=1.6e-2)
        torch.testing.assert_close(m.double(), xf.mean(dim=(1, 2, 3), keepdim=True),
                                   atol=1e-3, rtol=1e-3)
        var = xf.var(dim=(1, 2, 3), keepdim=True, unbiased=False)
        torch.testing.assert_close(iv.double(), torch.rsqrt(var + eps), atol=1e-3, rtol=1e-3)

    call(1e-5, on_handle=True)                      # the general paths; Steady made
    first = g._last_plan
    assert g._steady is not None and g._steady.plan is first
    call(1e-5, on_handle=True)                      # fast path, new buffers
    call(1e-5, on_handle=True, by_uid=True)
    g.handle = None
    call(1e-5, on_handle=False)                     # torch's current stream
    call(0.5, on_handle=False)                      # the same plan, another value
    assert g._last_plan is first and len(g._plans) == 1
    call(1e-5, on_handle=False)
    assert g._last_plan is first
    x = torch.randn(N, C, 1, 1, device="cuda").to(memory_format=torch.channels_last)  # f32
    pack = {X: x, S: torch.ones(1, C, 1, 1, device="cuda", dtype=torch.bfloat16),
            B: torch.zeros(1, C, 1, 1, device="cuda", dtype=torch.bfloat16),
            E: torch.full((1, 1, 1, 1), 1e-5), Y: torch.empty_like(x, dtype=torch.bfloat16),
            mean: torch.empty(N, 1, 1, 1, device="cuda"),
            inv: torch.empty(N, 1, 1, 1, device="cuda")}
    import dnnc_runtime
    with pytest.raises(dnnc_runtime.ArgumentError, match="X.*expected dtype bf16"):
        g.execute(pack, None)


def test_pass_by_value_scalars_change_per_execute_on_one_plan(handle, monkeypatch):
    """A layernorm whose epsilon and an output scale are pass-by-value
    tensors: runtime scalars of one compiled plan (no compile after
    build_plans), each execute's values checked against torch."""
    h, stream = handle
    compiles = []
    real = cudnn.pygraph._compile
    monkeypatch.setattr(cudnn.pygraph, "_compile",
                        lambda self, values: compiles.append(values) or real(self, values))
    torch.manual_seed(4)
    N, C = 512, 1024
    x = 0.05 * torch.randn(N, C, 1, 1, device="cuda")
    scale = torch.randn(1, C, 1, 1, device="cuda")
    bias = torch.randn(1, C, 1, 1, device="cuda")
    g = cudnn.pygraph(io_data_type=cudnn.data_type.FLOAT,
                      intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=h)
    X, S, B = g.tensor_like(x), g.tensor_like(scale), g.tensor_like(bias)
    E = g.tensor(name="eps", dim=[1, 1, 1, 1], is_pass_by_value=True,
                 data_type=cudnn.data_type.FLOAT)
    A = g.tensor(name="alpha", dim=[1, 1, 1, 1], is_pass_by_value=True,
                 data_type=cudnn.data_type.FLOAT)
    Y = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.INFERENCE, input=X, scale=S,
                    bias=B, epsilon=E)[0]
    Z = g.scale(Y, A).set_output(True)
    _build(g)
    for eps, alpha in ((1e-5, 1.0), (0.25, -2.0), (torch.full((1, 1, 1, 1), 1e-3), 0.5)):
        z = _nan_like(x)
        g.execute({X: x, S: scale, B: bias, E: eps, A: alpha, Z: z}, None, handle=h)
        stream.synchronize()
        eps, alpha = float(eps), float(alpha)
        ref = F.layer_norm(x.double(), [C, 1, 1], scale.double().squeeze(0),
                           bias.double().squeeze(0), eps) * alpha
        torch.testing.assert_close(z.double(), ref, rtol=1e-4, atol=1e-4)
    assert len(compiles) == 1 and len(g._plans) == 1
