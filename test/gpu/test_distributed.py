"""dnnc under ``torch.distributed`` the way data-parallel users run it: one
process per GPU, NCCL between them.

Each rank JIT-compiles three graphs of test_jit.py (a conv, a matmul, a
layernorm) into one JIT cache the ranks share, runs them on its own device
``cuda:rank`` on inputs of its own, and all-reduces the outputs (a sum)
through NCCL. Rank 0 then runs the same executables on every rank's inputs
on its one GPU and sums them in the same order: the all-reduced results must
equal that single-GPU run, and the cache must hold one valid entry per
graph.

Needs two GPUs, PyTorch with NCCL and the MLIR bindings (the JIT compiles on
this machine); skipped otherwise.
"""

import os

import pytest

try:
    import mlir  # noqa: F401
except ImportError as err:
    pytest.skip(f"the MLIR bindings are not installed ({err}): the JIT compiles on this "
                "machine", allow_module_level=True)

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from test_jit import CASES  # noqa: E402

GRAPHS = ("conv_bias_relu_nhwc_bf16", "matmul_bias_gelu_f16", "layernorm_f32")
WORLD = 2


def _inputs(case, rank, device):
    _, make_inputs, _ = CASES[case]
    gen = torch.Generator().manual_seed(1000 + rank)
    return {name: t.to(device) for name, t in make_inputs(gen).items()}


def _run(exe, inputs):
    out = exe(**inputs)
    out = out if isinstance(out, tuple) else (out,)
    return [t.float() for t in out]


def _rank(rank, init_file, cache_dir, results):
    try:
        os.environ["DNNC_CACHE_DIR"] = cache_dir
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank,
                                world_size=WORLD)
        device = torch.device("cuda", rank)
        report = {}
        for case in GRAPHS:
            build, _, _ = CASES[case]
            exe = build().compile(target="cuda")
            outs = _run(exe, _inputs(case, rank, device))
            for t in outs:
                dist.all_reduce(t)          # summed over the ranks, in NCCL
            if rank == 0:                   # the same sum on one GPU
                alone = [sum(parts) for parts in zip(*(
                    _run(exe, _inputs(case, r, device)) for r in range(WORLD)))]
                report[case] = [(str(a.dtype), float((a - b).abs().max()),
                                 float(b.abs().max())) for a, b in zip(outs, alone)]
            torch.cuda.synchronize()
        dist.barrier()
        dist.destroy_process_group()
        results.put((rank, "ok", report))
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        results.put((rank, "error", repr(err)))


def test_ranks_jit_run_and_all_reduce_like_one_gpu(tmp_path):
    import multiprocessing

    if torch.cuda.device_count() < WORLD:
        pytest.skip(f"needs {WORLD} GPUs, this machine has {torch.cuda.device_count()}")
    if not dist.is_nccl_available():
        pytest.skip("PyTorch was built without NCCL")
    from dnnc import cache

    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    cache_dir = tmp_path / "cache"
    procs = [ctx.Process(target=_rank, args=(r, str(tmp_path / "init"), str(cache_dir), results))
             for r in range(WORLD)]
    for p in procs:
        p.start()
    try:
        outcomes = sorted(results.get(timeout=600) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=60)
    assert [status for _, status, _ in outcomes] == ["ok"] * WORLD, outcomes
    report = outcomes[0][2]
    for case in GRAPHS:
        for dtype, diff, scale in report[case]:
            # The same kernels on the same inputs write the same bits on either
            # GPU (their sums are in a fixed order), and a sum of two is one
            # addition either way: the results are equal, not close.
            assert scale > 0 and diff == 0, (case, dtype, diff, scale)
    names = sorted(os.listdir(cache_dir))
    assert len(names) == len(GRAPHS) and all(n.endswith(cache.ENTRY_SUFFIX) for n in names)
    for name in names:
        key = name[:-len(cache.ENTRY_SUFFIX)]
        assert cache.recorded_key((cache_dir / name).read_bytes()) == key
