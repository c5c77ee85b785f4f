"""Host time of re-launching a one-kernel dnnc_runtime executable (needs a GPU and PyTorch).

Builds a one-kernel .dnnpkg in memory (hand-written PTX: y = 2 x over 1000
f32), then times calls with ``time.perf_counter`` around each call, no
synchronization inside the loop, and prints medians and percentiles:

- ``exe(x, outputs=[y])``: the relaunch path (what a CUDA graph capture records);
- ``exe(x)``: the same, allocating the output with torch;
- ``cuLaunchKernel`` alone through cuda-python, with the argument array packed
  once: the floor the runtime adds to;
- ``torch.mul(x, 2, out=y)``: what PyTorch's own dispatch costs, for scale.

Usage: ``PYTHONPATH=runtime python bench/launch_overhead.py [--calls N]``.
"""

import argparse
import io
import json
import os
import statistics
import sys
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import dnnc_runtime
except ImportError:
    sys.path.insert(0, os.path.join(ROOT, "runtime"))
    import dnnc_runtime

N = 1000
PTX = r"""
.version 7.0
.target sm_80
.address_size 64

.visible .entry scale2(.param .u64 x, .param .u64 y, .param .u64 n)
{
    .reg .pred %p<2>;
    .reg .f32 %f<3>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    ld.param.u64 %rd3, [n];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    setp.ge.u64 %p1, %rd4, %rd3;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd5, %rd1;
    shl.b64 %rd6, %rd4, 2;
    add.s64 %rd7, %rd5, %rd6;
    ld.global.f32 %f1, [%rd7];
    add.f32 %f2, %f1, %f1;
    cvta.to.global.u64 %rd8, %rd2;
    add.s64 %rd9, %rd8, %rd6;
    st.global.f32 [%rd9], %f2;
DONE:
    ret;
}
"""

MANIFEST = {
    "format_version": 1, "arch": "sm_80", "graph": "scale",
    "inputs": [{"name": "x", "dims": [N], "strides": [1], "dtype": "f32"}],
    "outputs": [{"name": "y", "dims": [N], "strides": [1], "dtype": "f32"}],
    "workspace_bytes": 0,
    "buffers": [{"kind": "input", "index": 0}, {"kind": "output", "index": 0}],
    "kernels": [{"name": "scale_k0", "entry": "scale2", "strategy": "simt-pointwise",
                 "grid": [(N + 127) // 128, 1, 1], "block": [128, 1, 1], "shared_bytes": 0,
                 "args": [{"kind": "buffer", "buffer": 0}, {"kind": "buffer", "buffer": 1},
                          {"kind": "scalar", "type": "i64", "value": N}]}],
}


def package():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("manifest.json", json.dumps(MANIFEST))
        z.writestr("kernels.ptx", PTX)
    return buf.getvalue()


def measure(fn, calls, warmup=200):
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    samples.sort()
    us = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] * 1e6
    return statistics.median(samples) * 1e6, us(0.1), us(0.9)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("this benchmark needs PyTorch with CUDA")
    if not torch.cuda.is_available():
        sys.exit("this benchmark needs a CUDA GPU")
    from dnnc_runtime import cuda

    exe = dnnc_runtime.load(package())
    x = torch.randn(N, device="cuda")
    y = torch.empty_like(x)
    exe(x, outputs=[y])
    torch.cuda.synchronize()
    assert torch.equal(y, 2 * x), "wrong result"

    k = exe._launches[0]
    stream = torch.cuda.current_stream().cuda_stream

    def raw_launch():
        cuda.launch(k.function, *k.dims, stream, k.params)

    rows = [
        ("exe(x, outputs=[y])", lambda: exe(x, outputs=[y])),
        ("exe(x)", lambda: exe(x)),
        ("cuLaunchKernel only", raw_launch),
        ("torch.mul(x, 2, out=y)", lambda: torch.mul(x, 2, out=y)),
    ]
    device = cuda.get_device(x.device.index)
    print(f"{device.name} ({device.arch}), torch {torch.__version__}, {args.calls} calls each, "
          f"host microseconds per call")
    print(f"{'call':<26}{'median':>8}{'p10':>8}{'p90':>8}")
    for name, fn in rows:
        median, p10, p90 = measure(fn, args.calls)
        print(f"{name:<26}{median:8.1f}{p10:8.1f}{p90:8.1f}")


if __name__ == "__main__":
    main()
