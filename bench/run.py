"""Benchmark dnnc against PyTorch, measured in the same process.

Two steps, so the GPU machine needs no MLIR:

    python bench/run.py build --arch sm_90a --out .bench   # compile every case (needs MLIR)
    python bench/run.py run --dir .bench --json bench.json # time on the GPU (runtime + torch)

``run`` prints a table: each case's median time for dnnc and PyTorch (after
warm-up, ``triton.testing.do_bench`` medians, rotating input sets when they fit
in L2), the ratio dnnc / PyTorch, and the achieved rate: TB/s for memory-bound
cases (also as a share of a device-to-device copy measured in the same run),
TFLOP/s otherwise. Every case is first checked against PyTorch's result.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (ROOT, os.path.join(ROOT, "runtime"), HERE):
    if path not in sys.path:
        sys.path.insert(0, path)


def _slug(name):
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


def build(args):
    from cases import CASES

    from dnnc import compiler, graph_mlir

    os.makedirs(args.out, exist_ok=True)
    index = []
    for case in CASES:
        g = case.build()
        pkg = compiler.compile_module(graph_mlir.to_module(g),
                                      compiler.Options(target="cuda", arch=args.arch),
                                      basename=g.name)
        path = os.path.join(args.out, _slug(case.name) + ".dnnpkg")
        pkg.save(path)
        index.append({"name": case.name, "package": os.path.basename(path),
                      "kernels": len(pkg.manifest["kernels"])})
        print(f"{case.name:<44}{len(pkg.manifest['kernels']):>4} kernels")
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump({"arch": args.arch, "cases": index}, f, indent=1)


def _inputs(torch, exe, count):
    """``count`` sets of random device inputs in the manifest's layouts."""
    dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    sets = []
    for _ in range(count):
        tensors = []
        for spec in exe.inputs:
            t = torch.empty_strided(spec.dims, spec.strides, dtype=dtypes[spec.dtype],
                                    device="cuda")
            t.copy_(torch.randn(spec.dims, device="cuda"))
            tensors.append(t)
        sets.append(tensors)
    return sets


def run(args):
    import torch
    import triton.testing

    import dnnc_runtime
    from cases import CASES

    torch.manual_seed(0)
    with open(os.path.join(args.dir, "cases.json")) as f:
        index = {c["name"]: c for c in json.load(f)["cases"]}
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")

    x = torch.randn(16384, 8192, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    copy_ms = bench(lambda: y.copy_(x))
    copy_tbs = 2 * x.numel() * 2 / copy_ms / 1e9
    del x, y
    rows = []
    for case in CASES:
        entry = index.get(case.name)
        if entry is None:
            continue
        exe = dnnc_runtime.load(os.path.join(args.dir, entry["package"]))
        sets = _inputs(torch, exe, max(1, min(8, int(4 * l2 // max(case.bytes, 1)))))
        outs = [torch.empty_strided(s.dims, s.strides, dtype=sets[0][0].dtype, device="cuda")
                for s in exe.outputs]
        exe(*sets[0], outputs=outs)
        want = case.torch_fn(torch, *sets[0])
        err = ((outs[0].double() - want.double()).norm() / want.double().norm()).item()
        step = [0]

        def ours():
            step[0] = (step[0] + 1) % len(sets)
            exe(*sets[step[0]], outputs=outs)

        def theirs():
            step[0] = (step[0] + 1) % len(sets)
            case.torch_fn(torch, *sets[step[0]])

        t_dnnc, t_torch = bench(ours), bench(theirs)
        row = {"case": case.name, "dnnc_ms": t_dnnc, "torch_ms": t_torch,
               "ratio": t_dnnc / t_torch, "rel_err": err, "kernels": entry["kernels"]}
        if case.memory_bound:
            row["dnnc_tbs"] = case.bytes / t_dnnc / 1e9
            row["torch_tbs"] = case.bytes / t_torch / 1e9
        else:
            row["dnnc_tflops"] = case.flops / t_dnnc / 1e9
            row["torch_tflops"] = case.flops / t_torch / 1e9
        rows.append(row)
        del sets, outs, want
        torch.cuda.empty_cache()
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "copy_tbs": copy_tbs, "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    print(f"device: {report['device']}, torch {report['torch']}, "
          f"device copy {copy_tbs:.2f} TB/s")
    print(f"{'case':<40}{'kern':>5}{'dnnc ms':>10}{'torch ms':>10}{'ratio':>8}  "
          f"{'dnnc rate':>16}{'torch rate':>16}{'rel err':>9}")
    for r in rows:
        if "dnnc_tbs" in r:
            mine = f"{r['dnnc_tbs']:.2f} TB/s {100 * r['dnnc_tbs'] / copy_tbs:3.0f}%"
            base = f"{r['torch_tbs']:.2f} TB/s"
        else:
            mine = f"{r['dnnc_tflops']:.1f} TFLOP/s"
            base = f"{r['torch_tflops']:.1f} TFLOP/s"
        print(f"{r['case']:<40}{r['kernels']:>5}{r['dnnc_ms']:>10.3f}{r['torch_ms']:>10.3f}"
              f"{r['ratio']:>8.1f}  {mine:>16}{base:>16}{r['rel_err']:>9.1e}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    b = sub.add_parser("build")
    b.add_argument("--arch", default="sm_90a")
    b.add_argument("--out", default=os.path.join(ROOT, ".bench"))
    r = sub.add_parser("run")
    r.add_argument("--dir", default=os.path.join(ROOT, ".bench"))
    r.add_argument("--json", default=None)
    args = p.parse_args()
    build(args) if args.step == "build" else run(args)


if __name__ == "__main__":
    main()
