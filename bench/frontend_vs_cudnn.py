"""cudnn-frontend graphs run by ``dnnc.frontend`` against the same graphs run
by cuDNN itself, in one process on one GPU.

Each graph is written once against cudnn-frontend's Python API and built
twice: with NVIDIA's ``cudnn`` module (the ``nvidia-cudnn-frontend`` wheel on
PyTorch's cuDNN) and with ``dnnc.frontend``. Both runs' outputs are compared
with each other, then timed.

Three figures per library:

* device time per ``execute``: calls back to back, queued behind a sleeping
  kernel so that the host's time does not show, over input sets rotated so
  that they do not stay in L2;
* host time per ``execute``: wall time of a burst of calls on a small graph,
  without synchronizing, so the GPU is never what waits;
* ``build_plans`` of a graph built before, in a new process (dnnc's JIT
  cache warm), with the import time apart.

    python bench/frontend_vs_cudnn.py [--json OUT] [--hidden 768,1024,...]
    python bench/frontend_vs_cudnn.py --probe-only [--bytecode compile|as-is]

``--probe-only`` runs the new processes alone (dnnc.frontend and CUDA
torch; no cudnn-frontend); dnnc's bytecode is compiled before them unless
``--bytecode as-is``.

On a GPU machine without the MLIR bindings, dnnc's plans are compiled where
MLIR is and serialized (``pygraph.serialize``, with each role's uid), then
run there deserialized, keyed by uid (the build probe needs the compiler,
so it is left out):

    python bench/frontend_vs_cudnn.py --save-plans DIR [--hidden ...] [--arch sm_90a]
    python bench/frontend_vs_cudnn.py --plans DIR --no-probe [--json OUT]
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROWS = 2048
HIDDEN = (768, 1024, 2048, 4096, 8192)
KINDS = ("layernorm", "rmsnorm")
PHASES = ("inference", "training", "backward")
EPSILON = 1e-5


def _tensor(g, name, like):
    return g.tensor(name=name, dim=list(like.size()), stride=list(like.stride()),
                    data_type=like.dtype)


def build(mod, handle, kind, phase, data, **graph_options):
    """The graph of ``kind`` / ``phase`` on ``mod`` (``cudnn`` or
    ``dnnc.frontend``), built to plans; returns (graph, {role: tensor}).
    ``graph_options``: more keywords of ``pygraph`` (dnnc's target and
    sm_version, to compile without a GPU)."""
    g = mod.pygraph(intermediate_data_type=mod.data_type.FLOAT,
                    compute_data_type=mod.data_type.FLOAT, handle=handle, **graph_options)
    t = {"x": _tensor(g, "X", data["x"]), "scale": _tensor(g, "scale", data["scale"])}
    if kind == "layernorm":
        t["bias"] = _tensor(g, "bias", data["bias"])
    if phase == "backward":
        t["dy"] = _tensor(g, "DY", data["dy"])
        t["inv_var"] = _tensor(g, "inv_var", data["inv_var"])
        if kind == "layernorm":
            t["mean"] = _tensor(g, "mean", data["mean"])
            dx, dscale, dbias = g.layernorm_backward(
                name="DLN", grad=t["dy"], input=t["x"], scale=t["scale"], mean=t["mean"],
                inv_variance=t["inv_var"])
            t.pop("bias")
            outs = {"dx": dx, "dscale": dscale, "dbias": dbias}
        else:
            dx, dscale, _ = g.rmsnorm_backward(name="DRMS", grad=t["dy"], input=t["x"],
                                               scale=t["scale"], inv_variance=t["inv_var"],
                                               has_dbias=False)
            outs = {"dx": dx, "dscale": dscale}
    else:
        eps = g.tensor(name="epsilon", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1],
                       is_pass_by_value=True, data_type=mod.data_type.FLOAT)
        t["epsilon"] = eps
        fwd_phase = (mod.norm_forward_phase.TRAINING if phase == "training"
                     else mod.norm_forward_phase.INFERENCE)
        if kind == "layernorm":
            y, mean, inv_var = g.layernorm(name="LN", norm_forward_phase=fwd_phase, input=t["x"],
                                           scale=t["scale"], bias=t["bias"], epsilon=eps)
            outs = {"y": y}
            if phase == "training":
                outs.update(mean=mean, inv_var=inv_var)
        else:
            y, inv_var = g.rmsnorm(name="RMS", norm_forward_phase=fwd_phase, input=t["x"],
                                   scale=t["scale"], bias=None, epsilon=eps)
            outs = {"y": y}
            if phase == "training":
                outs["inv_var"] = inv_var
    import torch
    for role, o in outs.items():
        o.set_output(True).set_data_type(data["x"].dtype if role in ("y", "dx", "dscale", "dbias")
                                         else torch.float32)
    t.update(outs)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([mod.heur_mode.A, mod.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    return g, t


def make_data(kind, phase, hidden, seed=0, device="cuda"):
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    x = (torch.randn(ROWS, hidden, 1, 1, device=device, generator=gen) * 2 - 0.5).to(torch.bfloat16)
    data = {"x": x,
            "scale": (torch.randn(1, hidden, 1, 1, device=device, generator=gen) + 1).to(torch.bfloat16),
            "bias": torch.randn(1, hidden, 1, 1, device=device, generator=gen).to(torch.bfloat16),
            "epsilon": torch.full((1, 1, 1, 1), EPSILON)}
    xf = x.float()
    if kind == "layernorm":
        mean = xf.mean(dim=(1, 2, 3), keepdim=True)
        var = xf.var(dim=(1, 2, 3), keepdim=True, unbiased=False)
    else:
        mean = torch.zeros(ROWS, 1, 1, 1, device=device)
        var = (xf * xf).mean(dim=(1, 2, 3), keepdim=True)
    data["mean"] = mean
    data["inv_var"] = torch.rsqrt(var + EPSILON)
    data["dy"] = torch.randn(ROWS, hidden, 1, 1, device=device, generator=gen).to(torch.bfloat16)
    return data


def _plan_stem(directory, kind, phase, hidden):
    return os.path.join(directory, f"{kind}_{phase}_{hidden}")


def save_plans(directory, hiddens, arch):
    """Compile dnnc's plans of every graph for ``arch`` (no GPU needed) and
    write each serialized (``.plan``) with its roles' uids (``.json``)."""
    import dnnc.frontend as dfe
    os.makedirs(directory, exist_ok=True)
    handle = dfe.create_handle()
    for kind in KINDS:
        for phase in PHASES:
            for hidden in hiddens:
                data = make_data(kind, phase, hidden, device="cpu")
                g, t = build(dfe, handle, kind, phase, data, target="cuda",
                             sm_version=int(arch[3:].rstrip("a")))
                stem = _plan_stem(directory, kind, phase, hidden)
                with open(stem + ".plan", "wb") as f:
                    f.write(bytes(g.serialize()))
                with open(stem + ".json", "w") as f:
                    json.dump({role: tensor.get_uid() for role, tensor in t.items()}, f)
                print(f"{kind} {phase} {hidden}: {stem}.plan", flush=True)


def saved_plan(directory, kind, phase, hidden):
    """(graph, {role: uid}) of a dnnc plan ``save_plans`` wrote: deserialized,
    no compiler needed; its variant packs are keyed by uid."""
    import dnnc.frontend as dfe
    g = dfe.pygraph()
    stem = _plan_stem(directory, kind, phase, hidden)
    with open(stem + ".plan", "rb") as f:
        g.deserialize(f.read())
    with open(stem + ".json") as f:
        return g, json.load(f)


def graph_of(label, mod, handle, kind, phase, data, plans=None):
    """The graph and roles of ``label``'s library: built, or for dnnc with
    ``plans`` the saved plan."""
    if label == "dnnc" and plans:
        return saved_plan(plans, kind, phase, data["x"].shape[1])
    return build(mod, handle, kind, phase, data)


def pack(t, data, outs):
    p = {}
    for role, tensor in t.items():
        if role in outs:
            p[tensor] = outs[role]
        elif role in data:
            p[tensor] = data[role]
    return p


def output_roles(kind, phase):
    if phase == "backward":
        return ("dx", "dscale") + (("dbias",) if kind == "layernorm" else ())
    if phase == "training":
        return ("y", "inv_var") + (("mean",) if kind == "layernorm" else ())
    return ("y",)


def alloc_outputs(kind, phase, data):
    import torch
    like = {"y": data["x"], "dx": data["x"], "dscale": data["scale"], "dbias": data["scale"],
            "mean": data["inv_var"], "inv_var": data["inv_var"]}
    return {r: torch.full_like(like[r], float("nan")) for r in output_roles(kind, phase)}


def kernels_per_call(run_once, calls=20):
    """Kernels one call launches, counted in a ``torch.profiler`` trace."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            run_once(i)
        torch.cuda.synchronize()
    kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA"
                  and not e.name.startswith(("Memcpy", "Memset")))
    return kernels / calls


def device_time_ms(run_once, calls=100, host_us=50.0):
    """GPU time per call of ``calls`` calls back to back: the calls are
    queued behind a sleeping kernel long enough to cover their host time, so
    the events around them time the GPU alone. (A profiler's kernel
    durations would not do: dnnc launches a kernel that waits on the one
    before it (programmatic stream serialization), whose duration then
    includes the wait.)"""
    import torch
    for i in range(5):
        run_once(i)
    torch.cuda.synchronize()
    cycles = int(calls * host_us * 4 * 2000)  # 4x the host time at 2 GHz
    times = []
    for _ in range(7):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(cycles)
        start.record()
        for i in range(calls):
            run_once(i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    times.sort()
    return times[len(times) // 2]


def host_time_us(run_once, calls=2000):
    import torch
    for _ in range(50):
        run_once(0)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for i in range(calls // 5):
            run_once(0)
        best = min(best, (time.perf_counter() - start) / (calls // 5) * 1e6)
        torch.cuda.synchronize()
    return best


def compare(kind, phase, hidden, mods, plans=None):
    import torch
    sets = max(2, int(200e6 // (ROWS * hidden * 2 * 3)) + 1)
    datas = [make_data(kind, phase, hidden, seed=s) for s in range(sets)]
    row = {"case": f"{kind} {phase} [{ROWS}, {hidden}, 1, 1] bf16", "kind": kind,
           "phase": phase, "hidden": hidden}
    results = {}
    for label, (mod, handle) in mods.items():
        g, t = graph_of(label, mod, handle, kind, phase, datas[0], plans)
        ws = torch.empty(max(1, g.get_workspace_size()), device="cuda", dtype=torch.uint8)
        outs = [alloc_outputs(kind, phase, d) for d in datas]
        packs = [pack(t, d, o) for d, o in zip(datas, outs)]

        def run_once(i, g=g, packs=packs, ws=ws, handle=handle):
            g.execute(packs[i % len(packs)], ws, handle=handle)

        run_once(0)
        torch.cuda.synchronize()
        results[label] = {r: v.clone() for r, v in outs[0].items()}
        host = host_time_us(run_once, 200)
        row[f"{label}_host_us"] = host
        row[f"{label}_ms"] = device_time_ms(run_once, 100, host)
        row[f"{label}_kernels"] = kernels_per_call(run_once)
    ref, got = results["cudnn"], results["dnnc"]
    errs = {}
    for r in ref:
        a, b = ref[r].float(), got[r].float()
        finite = bool(torch.isfinite(b).all())
        scale = a.abs().max().item() or 1.0
        errs[r] = (b - a).abs().max().item() / scale if finite else float("nan")
    row["max_rel_diff"] = errs
    row["ratio"] = row["dnnc_ms"] / row["cudnn_ms"]
    return row


def host_rows(mods, plans=None):
    import torch
    rows = []
    for kind, phase, hidden in (("layernorm", "training", 768), ("rmsnorm", "inference", 768)):
        data = make_data(kind, phase, hidden)
        row = {"case": f"execute host time, {kind} {phase} [{ROWS}, {hidden}, 1, 1] bf16"}
        for label, (mod, handle) in mods.items():
            g, t = graph_of(label, mod, handle, kind, phase, data, plans)
            ws = torch.empty(max(1, g.get_workspace_size()), device="cuda", dtype=torch.uint8)
            p = pack(t, data, alloc_outputs(kind, phase, data))
            row[f"{label}_us"] = host_time_us(lambda i: g.execute(p, ws, handle=handle))
        rows.append(row)
    return rows


PROBE = r"""
import sys, time, json
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import dnnc.frontend as mod
t2 = time.perf_counter()
sys.path.insert(0, {bench!r})
import frontend_vs_cudnn as b
data = b.make_data("layernorm", "training", 4096)
handle = mod.create_handle()
t3 = time.perf_counter()
g, t = b.build(mod, handle, "layernorm", "training", data)
t4 = time.perf_counter()
ws = torch.empty(max(1, g.get_workspace_size()), device="cuda", dtype=torch.uint8)
g.execute(b.pack(t, data, b.alloc_outputs("layernorm", "training", data)), ws, handle=handle)
torch.cuda.synchronize()
t5 = time.perf_counter()
print(json.dumps({{"import_torch_s": t1 - t0, "import_frontend_s": t2 - t1,
                   "build_s": t4 - t3, "first_execute_s": t5 - t4}}))
"""


def build_probe(bytecode="compile"):
    """``build_plans`` in fresh processes: the first fills dnnc's JIT cache,
    the next ones find the graph there. ``bytecode``: compile dnnc's
    bytecode first ("compile"), or time the tree as it is ("as-is")."""
    bench = os.path.dirname(os.path.abspath(__file__))
    code = PROBE.format(bench=bench)
    sys.path.insert(0, bench)
    import host_overhead

    # As an installed dnnc: without bytecode (PYTHONDONTWRITEBYTECODE and no
    # __pycache__) every process would compile dnnc's sources, 60 ms or more.
    print(host_overhead.compile_bytecode(bytecode), flush=True)
    runs = []
    for _ in range(4):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--hidden", default=",".join(map(str, HIDDEN)))
    ap.add_argument("--no-probe", action="store_true")
    ap.add_argument("--bytecode", choices=("compile", "as-is"), default="compile",
                    help="the probe's processes read dnnc's bytecode, compiled first, or find "
                         "the tree as it is")
    ap.add_argument("--probe-only", action="store_true",
                    help="only the new processes' import and build_plans (dnnc.frontend alone: "
                         "cudnn-frontend not needed)")
    ap.add_argument("--save-plans", metavar="DIR",
                    help="compile dnnc's plans for --arch and write them to DIR (no GPU needed)")
    ap.add_argument("--arch", default="sm_90a", help="the arch --save-plans compiles for")
    ap.add_argument("--plans", metavar="DIR",
                    help="run dnnc's plans --save-plans wrote (no compiler needed)")
    args = ap.parse_args(argv)
    if args.save_plans:
        save_plans(args.save_plans, [int(h) for h in args.hidden.split(",")], args.arch)
        return
    if args.plans and not args.no_probe:
        ap.error("--plans needs --no-probe: the build probe compiles")
    if args.probe_only:
        for i, p in enumerate(build_probe(args.bytecode)):
            print(f"new process {i}: import torch {p['import_torch_s']*1e3:.0f} ms, "
                  f"import dnnc.frontend {p['import_frontend_s']*1e3:.0f} ms, "
                  f"build to plans {p['build_s']*1e3:.1f} ms, "
                  f"first execute {p['first_execute_s']*1e3:.1f} ms")
        return
    import torch
    import cudnn
    import dnnc.frontend as dfe
    mods = {"cudnn": (cudnn, cudnn.create_handle()), "dnnc": (dfe, dfe.create_handle())}
    stream = torch.cuda.current_stream().cuda_stream
    for mod, handle in mods.values():
        mod.set_stream(handle=handle, stream=stream)
    rows = []
    for kind in KINDS:
        for phase in PHASES:
            for hidden in map(int, args.hidden.split(",")):
                try:
                    rows.append(compare(kind, phase, hidden, mods, args.plans))
                except Exception as e:  # record and go on: one graph must not hide the rest
                    rows.append({"case": f"{kind} {phase} {hidden}", "error": repr(e)[:300]})
                print(json.dumps(rows[-1]), flush=True)
    host = host_rows(mods, args.plans)
    probe = [] if args.no_probe else build_probe(args.bytecode)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cudnn": cudnn.backend_version_string(), "date": time.strftime("%Y-%m-%d"),
              "rows": rows, "host": host, "build_probe": probe}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(f"{'case':52s} {'cudnn ms':>9s} {'dnnc ms':>9s} {'dnnc/cudnn':>10s} kernels  max diff")
    for r in rows:
        if "error" in r:
            print(f"{r['case']:52s} ERROR {r['error'][:80]}")
            continue
        print(f"{r['case']:52s} {r['cudnn_ms']:9.4f} {r['dnnc_ms']:9.4f} {r['ratio']:10.2f} "
              f"{r['cudnn_kernels']:.0f}/{r['dnnc_kernels']:.0f}  "
              f"{max(r['max_rel_diff'].values()):.2e}")
    for r in host:
        print(f"{r['case']}: cudnn {r['cudnn_us']:.1f} us, dnnc {r['dnnc_us']:.1f} us")
    for i, p in enumerate(probe):
        print(f"new process {i}: import torch {p['import_torch_s']*1e3:.0f} ms, "
              f"import dnnc.frontend {p['import_frontend_s']*1e3:.0f} ms, "
              f"build to plans {p['build_s']*1e3:.1f} ms, "
              f"first execute {p['first_execute_s']*1e3:.1f} ms")


if __name__ == "__main__":
    main()
