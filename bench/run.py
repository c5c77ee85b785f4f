"""Benchmark dnnc against PyTorch, measured in the same process.

Two steps, so the GPU machine needs no MLIR:

    python bench/run.py build --arch sm_90a --out .bench   # compile every case (needs MLIR)
    python bench/run.py run --dir .bench --json bench.json # time on the GPU (runtime + torch)

``--only PATTERN`` (both steps) keeps the cases whose name or group matches:
a substring, or an fnmatch pattern (``'conv*'``, ``'*backward*'``), case
insensitive, or with a leading ``=`` the whole name (``'=sdpa B16 H16 S1024 D128
bf16'``, not its twins); several patterns are separated by commas. ``build --only`` adds
to the index of an existing output directory instead of replacing it.

``run`` prints a table: each case's median time for dnnc and PyTorch (after
warm-up, ``triton.testing.do_bench`` medians, rotating input sets when they fit
in L2), the ratio dnnc / PyTorch, and the achieved rate: TB/s for memory-bound
cases (also as a share of a device-to-device copy measured in the same run),
TFLOP/s otherwise; a memory-bound case's share is given twice, of the large
copy's rate and of a copy that moves the case's own bytes (half read, half
written), which takes longer per byte on small problems: the limit the
case's size allows. Cases marked ``host_timed`` (tiny problems, whose kernels
take less than their launch) are timed instead by the host's clock over
back-to-back calls, dnnc's and PyTorch's alike (``host_ms``): their figure
includes the launch overhead. A case's ``others`` (other PyTorch paths to the
same result, such as SDPA's flash backend beside the cuDNN reference) are
timed the same way and printed in a column of their own, ``NAME ms``, present
when some chosen case has that variant; a variant that raises (a backend that
refuses the problem) is printed as ``-`` and does not make the case an error
row. Every case is first checked against PyTorch's
result (the largest relative error over its outputs; for boolean outputs the
share of elements that differ). A case that cannot run (no package, an error
in dnnc or in PyTorch) is printed as an error row, with the stage that failed,
and the run goes on (``--traceback`` prints where it failed). A summary per
group follows the table: cases measured, geometric mean of the ratios, errors.

The JSON (``--json``, rewritten after every case) holds ``device``, ``torch``,
``copy_tbs``, ``arch``, ``date`` (UTC), ``commit`` (below) and ``rows``, one
per measured case: ``case``, ``group``, ``dnnc_ms``, ``torch_ms``, ``ratio``,
``rel_err`` (the worst output), ``rel_errs`` (each output; null where PyTorch
gives no counterpart), ``kernels``, ``memory_bound``, ``flops``, ``bytes``,
and ``dnnc_tbs`` / ``torch_tbs`` and ``copy_same_tbs`` (the copy of the same
bytes) or ``dnnc_tflops`` / ``torch_tflops``, ``compile_ms`` for the cases
also timed under ``torch.compile``, ``torch_NAME_ms`` for each of the
case's ``others`` (null where the variant raised, its error then in
``torch_NAME_error``), ``kernel_ms`` with ``--kernels`` (each kernel's
median, the runtime's ``Executable.time``, by PTX entry, and ``total``),
and ``timing``: "host" for the
host-timed cases. Cases that could not be measured
are under ``errors``: ``case``, ``group``, ``stage``, ``error``, and the times
measured before the failure.

Without PyTorch, Triton or a GPU that PyTorch sees, ``run`` says which and
exits with status 2 (as when no case matches ``--only``).

``run --commit HASH`` names the dnnc commit the packages were built from
(``commit`` in the JSON); by default it is ``git rev-parse --short HEAD`` of
this checkout, and null where git cannot tell (no repository, no git). Pass
it where the packages were built from another tree than the one running them.

Results that docs/performance.md cites live in ``bench/results/``, named
``device-date-commit-what.json`` (``h200-2026-11-22-50dc0ee-all-cases.json``);
``python bench/summary.py FILE ...`` prints the rows of that page's summary
table from them.
"""

import argparse
import fnmatch
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (ROOT, os.path.join(ROOT, "runtime"), HERE):
    if path not in sys.path:
        sys.path.insert(0, path)


DEVICE = "cuda"  # where run() puts its tensors


def _slug(name):
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


def select(cases, only):
    """The cases whose name or group matches one of the comma-separated
    patterns in ``only`` (all of them when ``only`` is empty)."""
    patterns = [p.strip().lower() for p in (only or "").split(",") if p.strip()]
    if not patterns:
        return list(cases)

    def matches(text, pattern):
        text = text.lower()
        if pattern.startswith("="):
            return text == pattern[1:]
        return pattern in text or fnmatch.fnmatchcase(text, pattern)

    return [c for c in cases
            if any(matches(c.name, p) or matches(c.group, p) for p in patterns)]


def head_commit(root=ROOT):
    """``git rev-parse --short HEAD`` in ``root``, or None where git cannot
    tell (no git, not a repository)."""
    try:
        proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and commit else None


def _error_text(e):
    text = f"{type(e).__name__}: {e}".strip()
    return text.splitlines()[0][:300] if text else type(e).__name__


# ---------------------------------------------------------------------------- build


def build(args):
    from cases import CASES

    from dnnc import compiler, graph_mlir

    chosen = select(CASES, args.only)
    if not chosen:
        print(f"no case matches --only {args.only!r}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    index_path = os.path.join(args.out, "cases.json")
    index = {}
    if args.only and os.path.exists(index_path):
        with open(index_path) as f:
            old = json.load(f)
        if old.get("arch") == args.arch:
            index = {c["name"]: c for c in old["cases"]
                     if os.path.exists(os.path.join(args.out, c["package"]))}
    failed = []
    for case in chosen:
        try:
            g = case.build()
            pkg = compiler.compile_module(graph_mlir.to_module(g),
                                          compiler.Options(target="cuda", arch=args.arch,
                                                           config=case.config),
                                          basename=g.name)
            names = [t["name"] for t in pkg.manifest["inputs"]]
            if names != [t.name for t in g.inputs]:
                # torch_fn takes the inputs in the graph's order.
                raise RuntimeError(f"package inputs {names}: expected the graph's order "
                                   f"{[t.name for t in g.inputs]}")
        except Exception as e:  # one case's failure must not stop the others
            failed.append(case.name)
            index.pop(case.name, None)
            print(f"{case.name:<56}FAILED: {_error_text(e)}")
            continue
        path = os.path.join(args.out, _slug(case.name) + ".dnnpkg")
        pkg.save(path)
        index[case.name] = {"name": case.name, "group": case.group,
                            "package": os.path.basename(path),
                            "kernels": len(pkg.manifest["kernels"])}
        print(f"{case.name:<56}{len(pkg.manifest['kernels']):>4} kernels")
    with open(index_path, "w") as f:
        json.dump({"arch": args.arch, "cases": list(index.values())}, f, indent=1)
    if failed:
        print(f"{len(failed)} of {len(chosen)} cases failed to build: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------------- run


def _dtypes(torch):
    return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
            "f8E4M3FN": torch.float8_e4m3fn, "f8E5M2": torch.float8_e5m2, "i1": torch.bool,
            "i32": torch.int32}


def _inputs(torch, exe, case, count, device=DEVICE):
    """``count`` sets of random inputs in the manifest's layouts, each
    ``(tensors, prepared)``: the inputs after ``case.init``, and what
    ``case.torch_prepare`` keeps for PyTorch."""
    dtypes = _dtypes(torch)
    sets = []
    for _ in range(count):
        tensors = []
        for spec in exe.inputs:
            dt = dtypes[spec.dtype]
            # A dim the input broadcasts (stride 0) stores one element: fill a
            # tensor of size 1 there, then expand it to the manifest's dims.
            stored = [1 if s == 0 and n > 1 else n for n, s in zip(spec.dims, spec.strides)]
            t = torch.empty_strided(stored, spec.strides, dtype=dt, device=device)
            if dt is torch.bool:
                t.copy_(torch.rand(stored, device=device) < 0.5)
            else:
                t.copy_(torch.randn(stored, device=device))
            tensors.append(t.expand(spec.dims))
        if case.init is not None:
            case.init(torch, *tensors)
        prepared = tuple(case.torch_prepare(torch, *tensors)) if case.torch_prepare else ()
        sets.append((tensors, prepared))
    return sets


def _rel_err(torch, got, want):
    """||got - want|| / ||want|| in float64 (equal infinities count as equal);
    for boolean results, the share of elements that differ."""
    if want.shape != got.shape:
        if want.numel() != got.numel():
            raise ValueError(f"PyTorch result of shape {list(want.shape)}: expected "
                             f"{list(got.shape)} (the dnnc output)")
        want = want.reshape(got.shape)
    if got.dtype == torch.bool:
        return (got != want.bool()).double().mean().item()
    g, w = got.float().double(), want.float().double()
    same = (g == w) | (g.isnan() & w.isnan())
    diff = torch.where(same, torch.zeros_like(g), g - w)
    ref = torch.where(w.isfinite(), w, torch.zeros_like(w))
    return (diff.norm() / ref.norm().clamp_min(1e-30)).item()


def _measure(torch, bench, exe, case, entry, l2, traceback_wanted=False, device=DEVICE,
             kernels=False):
    """One row: times, ratio, rates, errors of the comparison with PyTorch; or
    the stage that failed and its error. ``kernels``: also each kernel's
    median (``kernel_ms``, the runtime's ``Executable.time``)."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    stage = "inputs"
    row = {"case": case.name, "group": case.group}
    try:
        sets = _inputs(torch, exe, case, max(1, min(8, int(4 * l2 // max(case.bytes, 1)))),
                       device)
        dtypes = _dtypes(torch)
        outs = [torch.empty_strided(s.dims, s.strides, dtype=dtypes[s.dtype], device=device)
                for s in exe.outputs]
        stage = "dnnc"
        exe(*sets[0][0], outputs=outs)
        sync()
        stage = "torch"
        want = case.torch_fn(torch, *sets[0][0], *sets[0][1])
        sync()
        stage = "check"
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        errs = [None if w is None else _rel_err(torch, o, w) for o, w in zip(outs, want)]
        del want
        step = [0]

        def ours():
            step[0] = (step[0] + 1) % len(sets)
            exe(*sets[step[0]][0], outputs=outs)

        def theirs():
            step[0] = (step[0] + 1) % len(sets)
            tensors, prepared = sets[step[0]]
            case.torch_fn(torch, *tensors, *prepared)

        stage = "dnnc timing"
        row["dnnc_ms"] = bench(ours)
        if kernels:
            row["kernel_ms"] = exe.time(*sets[0][0], outputs=outs, repeat=50)
        stage = "torch timing"
        row["torch_ms"] = bench(theirs)
        for name, fn in case.others.items():
            row.update(_time_variant(torch, bench, sync, name, fn, sets, traceback_wanted))
        if case.compiled:
            # torch.compile (default mode) of the same code: the fused
            # baseline for fused patterns. Every case compiles the same
            # lambda's code, which dynamo recompiles for each new case and,
            # past its recompile limit (8), runs eagerly instead: its caches
            # are cleared first, so each case is compiled afresh.
            stage = "torch.compile"
            torch._dynamo.reset()
            compiled = torch.compile(lambda *ts: case.torch_fn(torch, *ts))

            def theirs_compiled():
                step[0] = (step[0] + 1) % len(sets)
                tensors, prepared = sets[step[0]]
                compiled(*tensors, *prepared)
            theirs_compiled()
            sync()
            row["compile_ms"] = bench(theirs_compiled)
    except Exception as e:
        row.update(stage=stage, error=_error_text(e))
        if traceback_wanted:
            traceback.print_exc()
        return row
    finally:
        sets = outs = None
        if device == "cuda":
            try:
                torch.cuda.empty_cache()
            except Exception:  # a failed kernel can leave the context unusable
                pass
    t_dnnc, t_torch = row["dnnc_ms"], row["torch_ms"]
    known = [e for e in errs if e is not None]
    worst = (float("nan") if any(math.isnan(e) for e in known) else max(known)) if known else None
    row.update(ratio=t_dnnc / t_torch, rel_err=worst, rel_errs=errs,
               kernels=entry["kernels"], memory_bound=case.memory_bound, flops=case.flops,
               bytes=case.bytes)
    if case.memory_bound:
        row["dnnc_tbs"] = case.bytes / t_dnnc / 1e9
        row["torch_tbs"] = case.bytes / t_torch / 1e9
    else:
        row["dnnc_tflops"] = case.flops / t_dnnc / 1e9
        row["torch_tflops"] = case.flops / t_torch / 1e9
    return row


def _time_variant(torch, bench, sync, name, fn, sets, traceback_wanted=False):
    """``torch_NAME_ms`` of another PyTorch path to the case's result, timed
    as the reference is, over the same input sets; where it raises (a backend
    that refuses the problem) the time is None and ``torch_NAME_error`` says
    why: the variant is missing, the case is not an error."""
    step = [0]

    def call():
        step[0] = (step[0] + 1) % len(sets)
        tensors, prepared = sets[step[0]]
        fn(torch, *tensors, *prepared)

    try:
        call()
        sync()
        return {f"torch_{name}_ms": bench(call)}
    except Exception as e:
        if traceback_wanted:
            traceback.print_exc()
        return {f"torch_{name}_ms": None, f"torch_{name}_error": _error_text(e)}


def host_ms(fn, sync, calls=100, rounds=21):
    """Milliseconds per call of ``fn`` called back to back, by the host's
    clock (the median of ``rounds`` rounds of ``calls`` calls, each round
    ended by ``sync``): what a caller waits for per call when the kernels
    are shorter than their launch, the launch included. do_bench's events
    leave the launch out: the host issues it while the GPU still clears L2
    before the call."""
    for _ in range(calls):
        fn()
    sync()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3 / calls)
    return statistics.median(times)


NAME_W = 56
VARIANT_W = 12  # a column of another PyTorch path (``Case.others``)


def _header(others=()):
    """The table's header; ``others``: the names of the variant columns."""
    return (f"{'case':<{NAME_W}}{'kern':>5}{'dnnc ms':>10}{'torch ms':>10}{'ratio':>8}  "
            f"{'dnnc rate (of copy, same bytes)':>32}{'torch rate':>16}{'rel err':>9}"
            + "".join(f"{name + ' ms':>{VARIANT_W}}" for name in others))


def _variant_cells(r, others):
    """The row's time of each variant in ``others``, "-" where it is missing."""
    cells = []
    for name in others:
        ms = r.get(f"torch_{name}_ms")
        cells.append(f"{ms:>{VARIANT_W}.3f}" if ms is not None else f"{'-':>{VARIANT_W}}")
    return "".join(cells)


def _line(r, copy_tbs, others=()):
    if "error" in r:
        return f"{r['case']:<{NAME_W}}  ERROR ({r['stage']}): {r['error']}"
    if "dnnc_tbs" in r:
        mine = f"{r['dnnc_tbs']:.2f} TB/s {100 * r['dnnc_tbs'] / copy_tbs:3.0f}%"
        if r.get("copy_same_tbs"):
            mine += f" {100 * r['dnnc_tbs'] / r['copy_same_tbs']:3.0f}%"
        base = f"{r['torch_tbs']:.2f} TB/s"
    else:
        mine = f"{r['dnnc_tflops']:.1f} TFLOP/s"
        base = f"{r['torch_tflops']:.1f} TFLOP/s"
    err = "-" if r["rel_err"] is None else f"{r['rel_err']:.1e}"
    compiled = f"  torch.compile {r['compile_ms']:.3f} ms" if "compile_ms" in r else ""
    return (f"{r['case']:<{NAME_W}}{r['kernels']:>5}{r['dnnc_ms']:>10.3f}{r['torch_ms']:>10.3f}"
            f"{r['ratio']:>8.1f}  {mine:>32}{base:>16}{err:>9}{_variant_cells(r, others)}"
            f"{compiled}")


def _summary(rows, errors):
    """Per group: cases measured, geometric-mean ratio, errors."""
    from cases import GROUPS

    groups = [g for g in GROUPS if any(r["group"] == g for r in rows + errors)]
    groups += sorted({r["group"] for r in rows + errors} - set(groups))
    lines = [f"{'group':<22}{'cases':>6}{'geomean ratio':>15}{'errors':>8}"]
    for g in groups:
        ratios = [r["ratio"] for r in rows if r["group"] == g]
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
        n_err = sum(1 for r in errors if r["group"] == g)
        lines.append(f"{g:<22}{len(ratios):>6}{geo:>15.1f}{n_err:>8}")
    return lines


def run(args):
    try:
        import torch
        import triton.testing
    except ImportError as e:
        print(f"run needs PyTorch and Triton: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print(f"run needs a CUDA GPU: PyTorch {torch.__version__} sees none", file=sys.stderr)
        return 2

    import dnnc_runtime
    from cases import CASES

    chosen = select(CASES, args.only)
    if not chosen:
        print(f"no case matches --only {args.only!r}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    index_path = os.path.join(args.dir, "cases.json")
    index, arch = {}, None
    if os.path.exists(index_path):
        with open(index_path) as f:
            data = json.load(f)
        index, arch = {c["name"]: c for c in data["cases"]}, data.get("arch")
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")

    def host(fn):
        return host_ms(fn, torch.cuda.synchronize)

    def copy_rate():
        """TB/s of a device-to-device copy of a 16384 x 8192 bf16 tensor (read
        and write counted); its buffers are freed on return."""
        x = torch.randn(16384, 8192, device=DEVICE, dtype=torch.bfloat16)
        y = torch.empty_like(x)
        return 2 * x.numel() * 2 / bench(lambda: y.copy_(x)) / 1e9

    copy_tbs = copy_rate()
    same_bytes = {}

    def copy_of(nbytes):
        """TB/s of a copy that moves ``nbytes`` (half read, half written), once
        per size; random bytes, buffers freed on return."""
        if nbytes not in same_bytes:
            half = max(16, nbytes // 2 // 16 * 16)
            x = torch.randint(0, 256, (half,), device=DEVICE, dtype=torch.uint8)
            y = torch.empty_like(x)
            same_bytes[nbytes] = 2 * half / bench(lambda: y.copy_(x)) / 1e9
        return same_bytes[nbytes]
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "copy_tbs": copy_tbs, "rows": [], "arch": arch, "errors": [],
              "date": time.strftime("%Y-%m-%d", time.gmtime()),
              "commit": args.commit if args.commit is not None else head_commit()}
    rows, errors = report["rows"], report["errors"]

    def save():
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)

    print(f"device: {report['device']}, torch {report['torch']}, "
          f"device copy {copy_tbs:.2f} TB/s")
    # A column per variant that some chosen case has, in the cases' order.
    others = list(dict.fromkeys(name for case in chosen for name in case.others))
    print(_header(others), flush=True)
    for case in chosen:
        entry = index.get(case.name)
        if entry is None:
            row = {"case": case.name, "group": case.group, "stage": "package",
                   "error": f"not built: no package in {args.dir} (run build first)"}
        else:
            try:
                exe = dnnc_runtime.load(os.path.join(args.dir, entry["package"]))
            except Exception as e:
                row = {"case": case.name, "group": case.group, "stage": "load",
                       "error": _error_text(e)}
            else:
                try:
                    row = _measure(torch, host if case.host_timed else bench, exe, case,
                                   entry, l2, args.traceback,
                                   kernels=args.kernels and not case.host_timed)
                    if case.host_timed:
                        row["timing"] = "host"
                    elif "dnnc_tbs" in row:
                        row["copy_same_tbs"] = copy_of(row["bytes"])
                except Exception as e:
                    row = {"case": case.name, "group": case.group, "stage": "measure",
                           "error": _error_text(e)}
                exe = None
        (errors if "error" in row else rows).append(row)
        print(_line(row, copy_tbs, others), flush=True)
        if "kernel_ms" in row:
            print("    " + ", ".join(f"{k} {v:.4f}" for k, v in row["kernel_ms"].items()),
                  flush=True)
        save()
    print()
    for line in _summary(rows, errors):
        print(line)
    if errors:
        print(f"{len(errors)} of {len(chosen)} cases could not be measured: see the error rows")
    save()
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    only = dict(default=None, metavar="PATTERN",
                help="only the cases whose name or group matches (substring or fnmatch "
                     "pattern, case insensitive; comma-separated for several)")
    b = sub.add_parser("build")
    b.add_argument("--arch", default="sm_90a")
    b.add_argument("--out", default=os.path.join(ROOT, ".bench"))
    b.add_argument("--only", **only)
    r = sub.add_parser("run")
    r.add_argument("--dir", default=os.path.join(ROOT, ".bench"))
    r.add_argument("--json", default=None)
    r.add_argument("--only", **only)
    r.add_argument("--kernels", action="store_true",
                   help="also time each kernel of a case (its median, with CUDA events "
                        "around each launch; JSON kernel_ms)")
    r.add_argument("--traceback", action="store_true",
                   help="print the traceback of a case that fails")
    r.add_argument("--commit", default=None, metavar="HASH",
                   help="the dnnc commit the packages were built from, written to the JSON "
                        "(default: git rev-parse --short HEAD, where that works)")
    args = p.parse_args()
    return build(args) if args.step == "build" else run(args)


if __name__ == "__main__":
    sys.exit(main())
