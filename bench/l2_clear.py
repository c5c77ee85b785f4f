"""What ``triton.testing.do_bench``'s L2 clear costs read-only kernels.

do_bench clears L2 before each timed call by writing a 256 MB buffer. The
lines it leaves are dirty: a kernel that reads more than L2 holds evicts
them, and DRAM writes them back while the kernel reads. This script times
the bench's row and column sums and copies of the same bytes four ways, in
one process:

* ``do_bench``: as bench/run.py does;
* ``dirty``: each call after the same 256 MB write, timed alone by events;
* ``clean``: each call after a 256 MB read (L2 holds clean lines);
* ``b2b``: 100 calls back to back between two events.

    python bench/run.py build --out DIR --only 'reduce sum*'   # where MLIR is
    python bench/l2_clear.py DIR                                # on the GPU

Under Nsight Compute (``--cache-control none``), ``--profile`` runs only the
4096 x 8192 row sum, twice after each kind of clear, so that
``dram__bytes_write.sum`` shows the write-backs the kernel pays for.
"""

import argparse
import os
import statistics

import torch
import triton.testing

import dnnc_runtime

ROWS = "reduce_sum_rows_{}x8192_bf16.dnnpkg"
COLUMNS = "reduce_sum_columns_16384x8192_bf16.dnnpkg"
SETS = 3  # input sets rotated between calls


def _package(folder, name):
    """A call of the package on one of SETS random input sets in turn."""
    exe = dnnc_runtime.load(os.path.join(folder, name))
    dtypes = {"bf16": torch.bfloat16, "f32": torch.float32}
    sets = [[torch.randn(s.dims, device="cuda").to(dtypes[s.dtype]) for s in exe.inputs]
            for _ in range(SETS)]
    outs = [torch.full(s.dims, float("nan"), dtype=dtypes[s.dtype], device="cuda")
            for s in exe.outputs]
    step = [0]

    def call():
        step[0] = (step[0] + 1) % SETS
        exe(*sets[step[0]], outputs=outs)
    return call


def _copy(nbytes):
    """A device copy moving ``nbytes``: half read, half written."""
    sources = [torch.randint(0, 256, (nbytes // 2,), dtype=torch.uint8, device="cuda")
               for _ in range(SETS)]
    target = torch.empty_like(sources[0])
    step = [0]

    def call():
        step[0] = (step[0] + 1) % SETS
        target.copy_(sources[step[0]])
    return call


def _after(clear, fn, calls=60):
    """Median µs of ``fn`` alone, each call after ``clear``."""
    times = []
    for _ in range(calls):
        clear()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times) * 1e3


def _back_to_back(fn, calls=100):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="bench packages of 'reduce sum*' (bench/run.py build)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--profile", action="store_true",
                   help="only the 4096 x 8192 row sum after each clear, for a profiler")
    args = p.parse_args()
    torch.manual_seed(0)
    written = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    read = torch.randn(128 << 20, dtype=torch.bfloat16, device="cuda")  # 256 MB
    total = torch.empty((), dtype=torch.float32, device="cuda")

    def dirty():
        written.zero_()

    def clean():
        torch.sum(read, dim=(0,), dtype=torch.float32, out=total)

    small = 4096 * 8192 * 2
    if args.profile:
        row_sum = _package(args.dir, ROWS.format(4096))
        for clear in (dirty, clean, dirty, clean):
            clear()
            row_sum()
        torch.cuda.synchronize()
        return
    cases = [
        ("row sum 4096x8192", _package(args.dir, ROWS.format(4096))),
        ("copy of 64 MB", _copy(small)),
        ("row sum 16384x8192", _package(args.dir, ROWS.format(16384))),
        ("copy of 256 MB", _copy(4 * small)),
        ("column sum 16384x8192", _package(args.dir, COLUMNS)),
    ]
    print(f"{'case':24s} {'round':>5s} {'do_bench':>9s} {'dirty':>8s} {'clean':>8s} "
          f"{'b2b':>8s}  (µs)")
    for r in range(args.rounds):
        for name, fn in cases:
            bench = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
            print(f"{name:24s} {r:5d} {bench:9.1f} {_after(dirty, fn):8.1f} "
                  f"{_after(clean, fn):8.1f} {_back_to_back(fn):8.1f}", flush=True)


if __name__ == "__main__":
    main()
