"""Eager PyTorch, ``torch.compile`` (Inductor) and ``torch.compile(backend="dnnc")``
on whole models, measured in the same process (issue 35's table).

    python bench/torch_compile.py                       # every model, bf16
    python bench/torch_compile.py --only resnet50 --json torch_compile.json
    python bench/torch_compile.py --only vit_block --steps inference --kernels 12

Models (bench/torch_models.py): ResNet-50 (batch 128, 224 x 224, channels-last),
a GPT-2-small block (batch 8 x 1024 tokens), a ViT-Base block (batch 64 x 197
tokens), each in inference (no_grad, eval) and as a training step (forward,
a loss, backward: gradients of every parameter; no optimizer). For each: the
median time of a step (CUDA events, after warm-up), each compiled mode's
ratio to eager and dnnc's to Inductor, and the compile time (the first call:
Dynamo, AOTAutograd and the backend; dnnc's JIT cache is cleared first with
``--cold``, else it may hold kernels of an earlier run), and how many ATen
ops ran in dnnc against those left to torch. Needs a GPU, PyTorch with CUDA
and Triton, and the dnnc compiler.
"""

import argparse
import copy
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402

# model -> (batch, build keywords)
SIZES = {"resnet50": (128, {}), "gpt2_block": (8, {"seq": 1024}), "vit_block": (64, {})}
MODES = ("eager", "inductor", "dnnc")


def _step_fn(model, train):
    if not train:
        def infer(x):
            with torch.no_grad():
                return model(x)
        return infer

    def step(x):
        out = model(x)
        out.float().square().mean().backward()
        return out
    return step


def _time(fn, x, warmup, repeat):
    for _ in range(warmup):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def kernel_times(fn, x, top):
    """The GPU kernels of one call of ``fn``: (name, launches, total µs), the
    ``top`` costliest by time, and the total of all of them (torch.profiler,
    one call after the timed ones)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(x)
        torch.cuda.synchronize()
    rows = {}
    for e in prof.events():
        if e.device_type.name != "CUDA":
            continue
        name, us = e.name, e.time_range.elapsed_us()     # a kernel: its GPU interval
        count, total = rows.get(name, (0, 0.0))
        rows[name] = (count + 1, total + us)
    ranked = sorted(((n, c, t) for n, (c, t) in rows.items()), key=lambda r: -r[2])
    return {"total_us": sum(t for _, _, t in ranked), "launches": sum(c for _, c, _ in ranked),
            "top": [[n[:90], c, round(t, 1)] for n, c, t in ranked[:top]]}


def measure(name, train, modes, warmup, repeat, kernels=0):
    """One row: {mode: ms}, {mode: compile s} and dnnc's op counts; with
    ``kernels``, each mode's costliest GPU kernels of one call."""
    batch, kw = SIZES[name]
    base, (x,) = torch_models.build(name, batch, device="cuda", dtype=torch.bfloat16, **kw)
    base.train(train)
    row = {"model": name, "step": "training" if train else "inference", "batch": batch}
    for mode in modes:
        torch._dynamo.reset()
        model = copy.deepcopy(base)
        report = []
        if mode == "inductor":
            model = torch.compile(model, dynamic=False)
        elif mode == "dnnc":
            model = torch.compile(model, backend="dnnc", dynamic=False,
                                  options={"report": report})
        fn = _step_fn(model, train)
        try:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(x)
            torch.cuda.synchronize()
            row[f"{mode}_first_s"] = time.perf_counter() - t0
            row[f"{mode}_ms"] = _time(fn, x, warmup, repeat)
            if kernels:
                row[f"{mode}_kernels"] = kernel_times(fn, x, kernels)
        except Exception as err:   # a row of errors, and the run goes on
            row[f"{mode}_error"] = f"{type(err).__name__}: {err}"[:500]
            continue
        if report:
            row["dnnc_ops"] = sum(len(r.ops) for g in report for r in g.regions)
            row["torch_ops"] = sum(len(g.fallbacks) for g in report)
            row["dnnc_regions"] = sum(len(g.regions) for g in report)
    for mode in ("inductor", "dnnc"):
        if f"{mode}_ms" in row and "eager_ms" in row:
            row[f"{mode}_speedup"] = row["eager_ms"] / row[f"{mode}_ms"]
    if "dnnc_ms" in row and "inductor_ms" in row:
        row["dnnc_vs_inductor"] = row["inductor_ms"] / row["dnnc_ms"]
    return row


def _fmt(row, key, spec):
    value = row.get(key)
    return format(value, spec) if isinstance(value, (int, float)) else "-"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--steps", default="inference,training",
                        help="comma-separated: inference, training")
    parser.add_argument("--kernels", type=int, default=0, metavar="N",
                        help="also list each mode's N costliest GPU kernels of one call "
                             "(torch.profiler)")
    parser.add_argument("--cold", action="store_true",
                        help="compile dnnc's kernels afresh (an empty JIT cache directory)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("torch_compile: PyTorch sees no CUDA device", file=sys.stderr)
        return 2
    if args.cold:
        import tempfile
        os.environ["DNNC_CACHE_DIR"] = tempfile.mkdtemp(prefix="dnnc-cache-")
    import dnnc.torch  # noqa: F401  registers the backend

    names = [n for n in torch_models.MODELS if not args.only or n in args.only.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    rows = []
    print(f"{'model':<11} {'step':<9} {'eager ms':>9} {'inductor':>9} {'dnnc ms':>9} "
          f"{'x eager':>8} {'x induct':>8} {'compile s ind/dnnc':>19} {'ops dnnc/torch':>15}")
    for name in names:
        for train in (False, True):
            if ("training" if train else "inference") not in args.steps.split(","):
                continue
            row = measure(name, train, modes, args.warmup, args.repeat, args.kernels)
            rows.append(row)
            print(f"{name:<11} {row['step']:<9} {_fmt(row, 'eager_ms', '9.2f')} "
                  f"{_fmt(row, 'inductor_ms', '9.2f')} {_fmt(row, 'dnnc_ms', '9.2f')} "
                  f"{_fmt(row, 'dnnc_speedup', '8.2f')} {_fmt(row, 'dnnc_vs_inductor', '8.2f')} "
                  f"{_fmt(row, 'inductor_first_s', '9.1f')}/{_fmt(row, 'dnnc_first_s', '<9.1f')} "
                  f"{_fmt(row, 'dnnc_ops', '7d')}/{_fmt(row, 'torch_ops', '<7d')}")
            for mode in modes:
                if f"{mode}_error" in row:
                    print(f"    {mode}: {row[mode + '_error']}")
                if f"{mode}_kernels" in row:
                    k = row[f"{mode}_kernels"]
                    print(f"    {mode}: {k['launches']} kernel launches, {k['total_us']:.1f} µs "
                          "of kernel time")
                    for kname, count, us in k["top"]:
                        print(f"      {us:9.1f} µs  {count:3d} x  {kname}")
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                               "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
