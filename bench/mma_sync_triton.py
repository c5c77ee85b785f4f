"""tc-sm80 against another compiler's mma.sync GEMM, on the same GPU, in one
process: Triton's matmul built with its Hopper path (wgmma, "MMA v3") turned
off, so that it too multiplies with mma.sync from ldmatrix fragments fed by
cp.async, over a grid of tiles, stages and warps; cuBLAS in the same rounds.
The figure docs/performance.md sets the tc-sm80 target (60% of cuBLAS on an
H100/H200) against.

    python bench/run.py build --arch sm_90a --out DIR --only 'matmul 4096^3 bf16 tc-sm80'
    python bench/mma_sync_triton.py DIR [DIR ...] [--rounds 8]

Each DIR holds a build of that bench case (old and new builds side by side
compare two trees). 4096³ bf16, A row-major, B stored K x N as the bench
case has it. Each round times every kernel once (``do_bench`` median, input
sets alternated), starting from a different one; the table gives the median
over the rounds, the range, and the share of cuBLAS's median. Each Triton
kernel's PTX is checked to hold mma.sync and no wgmma.
"""

import argparse
import os
import statistics
import sys

# Read when Triton compiles: keep its matmuls on mma.sync on sm_90.
os.environ["DISABLE_MMA_V3"] = "1"

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runtime"))

M = N = K = 4096
PACKAGE = "matmul_4096_3_bf16_tc_sm80.dnnpkg"
# (BM, BN, BK, stages, warps)
CONFIGS = [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 256, 32, 4, 8),
           (256, 128, 32, 4, 8), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
           (128, 128, 64, 3, 8), (128, 256, 64, 4, 8), (256, 128, 64, 4, 8)]


def triton_matmul(triton, tl):
    @triton.jit
    def kernel(a, b, c, m, n, k, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        # Grouped tile order, as tc-sm80's: GROUP tiles of M down a column.
        pid = tl.program_id(0)
        tiles_m, tiles_n = tl.cdiv(m, BM), tl.cdiv(n, BN)
        first = pid // (GROUP * tiles_n) * GROUP
        rows = min(tiles_m - first, GROUP)
        within = pid % (GROUP * tiles_n)
        rm = (first + within % rows) * BM + tl.arange(0, BM)
        rn = (within // rows) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * sam + rk[None, :] * sak
        pb = b + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(0, k, BK):   # M, N, K multiples of the tile: no masks
            acc = tl.dot(tl.load(pa), tl.load(pb), acc)
            pa += BK * sak
            pb += BK * sbk
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.bfloat16))
    return kernel


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", help="bench build folders holding " + PACKAGE)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()

    import torch
    import triton
    import triton.language as tl
    import triton.testing

    import dnnc_runtime

    torch.manual_seed(0)
    sets = [(torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
             torch.randn(K, N, device="cuda", dtype=torch.bfloat16)) for _ in range(2)]
    ref = sets[0][0].float() @ sets[0][1].float()

    def rel_err(c):
        return ((c.float() - ref).abs().max() / ref.abs().max()).item()

    def alternating(call):
        turn = [0]

        def run():
            turn[0] ^= 1
            call(*sets[turn[0]])
        return run

    kernel = triton_matmul(triton, tl)
    fns, notes = {}, {}
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    for bm, bn, bk, stages, warps in CONFIGS:
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)

        def launch(a, b, bm=bm, bn=bn, bk=bk, stages=stages, warps=warps, grid=grid):
            return kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                b.stride(1), c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk,
                                GROUP=8, num_stages=stages, num_warps=warps)
        name = f"triton {bm}x{bn}x{bk}, {stages} stages, {warps} warps"
        c.fill_(float("nan"))
        compiled = launch(*sets[0])
        torch.cuda.synchronize()
        ptx = compiled.asm["ptx"]
        if "wgmma" in ptx or "mma.sync" not in ptx:
            sys.exit(f"{name}: not an mma.sync kernel (is MMA v3 still on?)")
        notes[name] = (f"{compiled.n_regs} registers, {compiled.n_spills} spills, "
                       f"error {rel_err(c):.1e}")
        fns[name] = alternating(launch)
    for folder in args.dirs:
        exe = dnnc_runtime.load(os.path.join(folder, PACKAGE))
        out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        exe(*sets[0], outputs=[out])
        torch.cuda.synchronize()
        name = "dnnc " + os.path.basename(os.path.normpath(folder))
        notes[name] = f"error {rel_err(out):.1e}"
        fns[name] = alternating(lambda a, b, exe=exe, out=out: exe(a, b, outputs=[out]))
    fns["cuBLAS"] = alternating(lambda a, b: a @ b)
    notes["cuBLAS"] = ""

    for f in fns.values():
        for _ in range(3):
            f()
    names = list(fns)
    times = {n: [] for n in names}
    for r in range(args.rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            times[n].append(1000 * triton.testing.do_bench(fns[n], warmup=25, rep=200,
                                                           return_mode="median"))
    cublas = statistics.median(times["cuBLAS"])
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton "
          f"{triton.__version__}; {args.rounds} rounds")
    print(f"{'kernel':44s} {'median µs':>10s} {'range':>15s} {'TFLOP/s':>8s} {'of cuBLAS':>9s}")
    for n in names:
        t = statistics.median(times[n])
        print(f"{n:44s} {t:10.1f} {min(times[n]):7.1f}-{max(times[n]):<7.1f} "
              f"{2 * M * N * K / t / 1e6:8.0f} {100 * cublas / t:8.1f}%  {notes[n]}")


if __name__ == "__main__":
    main()
