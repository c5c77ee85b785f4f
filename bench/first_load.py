"""A graph seen before, in a new process: ``build_plans`` and the first
``execute`` of dnnc.frontend graphs, with packages that carry a cubin
against packages of PTX only.

Each new process (``PROBE``) initializes CUDA through torch first, as user
code does (the issue's measurement made its tensors on the GPU first), then
imports dnnc.frontend and builds two cudnn-frontend graphs whose plans the
JIT cache holds: a layernorm (training, x ``[2048, 1024, 1, 1]`` bf16
channels-last, epsilon a pass-by-value tensor) and an SDPA (inference,
causal, q, k, v ``[4, 16, 1024, 128]`` bf16). For each it times, in
milliseconds of wall time:

- ``graph``: the tensors and the op;
- ``build_plans``: ``validate`` … ``build_plans`` (and its CPU time, which
  a shared machine's wait for a core leaves out), and inside it (wrapped
  functions: the parts add up to less, and overlap where one is made inside
  another, an import inside ``cache read and load`` for one):
  ``imports`` (the time spent in
  the imports it makes: modules ``import dnnc.frontend`` left for the first
  plan, the compiler driver, the cache, the runtime), ``detect GPU``
  (compiler.detect_gpu, the first graph only; inside it ``cuda init``:
  cuda-python's import, where nothing imported it before, and the first
  ``cuInit`` through it, which loads libcuda and resolves its functions),
  ``key`` (compiler.cache_key: the graph's serialization, the options, the
  digest of dnnc's sources) and ``cache read and load``
  (compiler.compile_or_load: the key, then the entry read and checked by
  the runtime's reader, every member and each cubin's sha256, and the
  Executable made; a compile if it missed);
- ``first execute``: the first ``execute`` and a synchronize, and inside it
  ``module load`` (dnnc_runtime.modules.load: cuModuleLoadDataEx of the
  cubin, or of the PTX, which the driver compiles or finds in its own disk
  cache);
- ``next execute``: the second one, for scale.

Modes, each a set of processes (the first of each, not counted, fills the
JIT cache, and the driver's; then the modes take turns, ``--runs`` each):

- ``cubin``: packages with a cubin (the default);
- ``ptx``: ``DNNC_CUBIN=0``: packages without one (what dnnc did before),
  its own JIT cache entries;
- ``cubin, no driver cache`` and ``ptx, no driver cache``: the same with
  ``CUDA_CACHE_DISABLE=1``, so that the driver compiles the PTX in every
  process, as on a machine that never saw it (the fuzzer's first run).

With ``--stub`` (the default without a GPU) the driver is bench/host_overhead.py's
stub, which loads nothing: the figures are dnnc's own host work, and the
driver cache modes are left out.

    python bench/first_load.py [--runs 5] [--modes cubin,ptx] [--json FILE] [--cache-dir DIR]
                               [--stub] [--profile 25] [--bytecode compile|as-is]

dnnc's bytecode is compiled first (``--bytecode as-is`` leaves the tree as
it is: where PYTHONDONTWRITEBYTECODE is set and no ``__pycache__`` exists,
every process compiles dnnc's sources, which on the build machine cost
``import dnnc.frontend`` 40 ms and the first ``build_plans`` 20 ms more).

Needs PyTorch, and the MLIR bindings for the one compile per mode (the JIT
cache is a fresh directory unless ``--cache-dir`` names one); not
cudnn-frontend. Prints a table of medians (and the best) per mode and step,
and which code each process loaded (``Executable.loaded_from``).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.dirname(os.path.abspath(__file__))

PROBE = r"""
import json, os, sys, time
STUB, ARCH, BENCH, PROFILE = %(stub)r, %(arch)r, %(bench)r, %(profile)r
clock = time.perf_counter
t = {}
start = clock()
import torch
if STUB:
    sys.path.insert(0, BENCH)
    import host_overhead
    host_overhead.install_stub(torch)
    device, sm_version = "cpu", int(ARCH[3:].rstrip("a"))
else:
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    device, sm_version = "cuda", None
t["torch and CUDA"] = clock() - start
start = clock()
import dnnc.frontend as cudnn
t["import dnnc.frontend"] = clock() - start

import builtins, importlib.util

current = {"graph": None, "step": None}
# The functions timed, each wrapped once its module is imported (by dnnc,
# not by this probe: a module imported here would leave its import out of
# the step that imports it). Without a GPU the stub has imported the runtime.
pending = [("dnnc.compiler", "detect_gpu", "  detect GPU"),
           ("dnnc_runtime.cuda", "init", "    cuda init"),
           ("dnnc.compiler", "cache_key", "  key"),
           ("dnnc.compiler", "compile_or_load", "  cache read and load"),
           ("dnnc_runtime.modules", "load", "  module load")]

def timed(owner, name, label):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = clock()
        try:
            return inner(*args, **kwargs)
        finally:
            key = f"{current['graph']}: {label}"
            t[key] = t.get(key, 0.0) + clock() - start
    setattr(owner, name, wrapper)

def wrap_imported():
    for item in list(pending):
        module = sys.modules.get(item[0])
        if module is not None:
            timed(module, item[1], item[2])
            pending.remove(item)

_import, depth = builtins.__import__, [0]

def timed_import(*args, **kwargs):
    # The outermost imports only: an import inside one is part of its time.
    if depth[0] or current["graph"] is None:
        return _import(*args, **kwargs)
    depth[0] += 1
    start = clock()
    try:
        return _import(*args, **kwargs)
    finally:
        depth[0] -= 1
        key = f"{current['graph']}:   imports ({current['step']})"
        t[key] = t.get(key, 0.0) + clock() - start
        if pending:
            wrap_imported()

wrap_imported()
builtins.__import__ = timed_import

def sync():
    if not STUB:
        torch.cuda.synchronize()

def pygraph():
    kw = {"sm_version": sm_version} if STUB else {}
    return cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16,
                         intermediate_data_type=cudnn.data_type.FLOAT,
                         compute_data_type=cudnn.data_type.FLOAT, target="cuda", **kw)

def layernorm(rows=2048, hidden=1024):
    g = pygraph()
    x = torch.randn(rows, hidden, 1, 1, device=device).to(torch.bfloat16)
    x = x.to(memory_format=torch.channels_last)
    scale = torch.randn(1, hidden, 1, 1, device=device).to(torch.bfloat16)
    bias = torch.randn(1, hidden, 1, 1, device=device).to(torch.bfloat16)
    X, S, B = g.tensor_like(x), g.tensor_like(scale), g.tensor_like(bias)
    E = g.tensor(name="epsilon", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], is_pass_by_value=True,
                 data_type=cudnn.data_type.FLOAT)
    Y, mean, inv_var = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING,
                                   input=X, scale=S, bias=B, epsilon=E)
    Y.set_output(True).set_data_type(cudnn.data_type.BFLOAT16)
    mean.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    inv_var.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    # The stub makes every torch tensor say it is on cuda:0: epsilon a number there.
    eps = 1e-5 if STUB else torch.full((1, 1, 1, 1), 1e-5)
    pack = {X: x, S: scale, B: bias, E: eps,
            Y: torch.empty_like(x), mean: torch.empty(rows, 1, 1, 1, device=device),
            inv_var: torch.empty(rows, 1, 1, 1, device=device)}
    return g, pack

def sdpa(b=4, h=16, s=1024, d=128):
    g = pygraph()
    q, k, v = (torch.randn(b, h, s, d, device=device).to(torch.bfloat16) for _ in range(3))
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    O, _ = g.sdpa(q=Q, k=K, v=V, is_inference=True, attn_scale=d ** -0.5, use_causal_mask=True)
    O.set_output(True).set_dim([b, h, s, d]).set_stride(list(q.stride()))
    return g, {Q: q, K: k, V: v, O: torch.empty_like(q)}

handle = cudnn.create_handle()
loaded, profile = {}, ""
for name, make in (("layernorm", layernorm), ("sdpa", sdpa)):
    current["graph"], current["step"] = name, "graph"
    sync()
    start = clock()
    g, pack = make()
    sync()
    t[f"{name}: graph"] = clock() - start
    if PROFILE and name == "layernorm":
        import cProfile
        # The thread's CPU time without a GPU (a shared build machine), else wall time.
        profiler = cProfile.Profile(time.thread_time) if STUB else cProfile.Profile()
        profiler.enable()
    current["step"] = "build_plans"
    start, start_cpu = clock(), time.process_time()
    g.validate(); g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support(); g.build_plans()
    t[f"{name}: build_plans"] = clock() - start
    if PROFILE and name == "layernorm":
        import io, pstats
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(PROFILE)
        profile = text.getvalue()
    t[f"{name}: build_plans, CPU time"] = time.process_time() - start_cpu
    for step in ("first execute", "next execute"):
        current["step"] = step
        start = clock()
        g.execute(pack, None, handle=handle)
        sync()
        t[f"{name}: {step}"] = clock() - start
    exe = g._last_plan.exe
    loaded[name] = [exe.loaded_from, exe.load_note]
from dnnc import cache, compiler
# Whether this process read dnnc's bytecode or compiled its sources (no
# __pycache__ and PYTHONDONTWRITEBYTECODE set: every process compiles them).
bytecode = os.path.exists(importlib.util.cache_from_source(compiler.__file__))
print(json.dumps({"ms": {k: v * 1e3 for k, v in t.items()}, "loaded": loaded,
                  "hits": cache.default().stats.hits, "profile": profile, "bytecode": bytecode}))
"""

MODES = (
    ("cubin", {}),
    ("ptx", {"DNNC_CUBIN": "0"}),
    ("cubin, no driver cache", {"CUDA_CACHE_DISABLE": "1"}),
    ("ptx, no driver cache", {"DNNC_CUBIN": "0", "CUDA_CACHE_DISABLE": "1"}),
)


def probe(script, extra, cache_dir):
    env = dict(os.environ)
    for key in ("DNNC_CUBIN", "CUDA_CACHE_DISABLE"):
        env.pop(key, None)
    env.update(extra)
    env["DNNC_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = os.pathsep.join(
        [ROOT, os.path.join(ROOT, "runtime")] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True)
    if proc.returncode:
        raise SystemExit(f"the probe failed ({extra}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured processes per mode")
    parser.add_argument("--stub", action="store_true",
                        help="stub the driver even when a GPU is present")
    parser.add_argument("--arch", default="sm_90a", help="the arch compiled for with --stub")
    parser.add_argument("--cache-dir", help="the JIT cache (default: a fresh directory)")
    parser.add_argument("--json", help="write every process's figures here too")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile the layernorm's build_plans (cProfile, which slows "
                             "it) in one more process of the first mode and print its N "
                             "costliest functions by cumulative time")
    parser.add_argument("--bytecode", choices=("compile", "as-is"), default="compile",
                        help="compile dnnc's bytecode before the new processes (as an "
                             "installed dnnc has it), or time the tree as it is (where "
                             "PYTHONDONTWRITEBYTECODE is set and no __pycache__ exists, every "
                             "process compiles dnnc's sources)")
    parser.add_argument("--modes", help="a comma-separated subset of the modes to run "
                        f"(of: {', '.join(label for label, _ in MODES)})")
    args = parser.parse_args(argv)
    import torch

    sys.path.insert(0, BENCH)
    import host_overhead

    bytecode_note = host_overhead.compile_bytecode(args.bytecode)
    stub = args.stub or not torch.cuda.is_available()
    where = (f"CPU, driver stubbed (plans for {args.arch})" if stub else
             f"{torch.cuda.get_device_name()}, real loads and launches")
    modes = MODES[:2] if stub else MODES
    if args.modes:
        wanted = [m.strip() for m in args.modes.split(",")]
        unknown = [m for m in wanted if m not in dict(MODES)]
        if unknown:
            parser.error(f"--modes: expected names among {[label for label, _ in MODES]}, "
                         f"got {unknown}")
        modes = [(label, extra) for label, extra in modes if label in wanted]
    script = PROBE % {"stub": stub, "arch": args.arch, "bench": BENCH, "profile": 0}
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="dnnc-first-load-")
    for _, extra in modes:          # fills the JIT cache and the driver's
        probe(script, extra, cache_dir)
    results = {label: [] for label, _ in modes}
    for _ in range(args.runs):      # the modes take turns: drift hits them alike
        for label, extra in modes:
            results[label].append(probe(script, extra, cache_dir))

    steps = list(dict.fromkeys(step for label, _ in modes for r in results[label]
                               for step in r["ms"]))
    bytecode = {r["bytecode"] for label, _ in modes for r in results[label]}
    print(f"{where}; {args.runs} new processes per mode; milliseconds of wall time, "
          "median (best); the compiler driver's bytecode "
          + ("read from __pycache__" if bytecode == {True} else
             "compiled from source in every process" if bytecode == {False} else
             "in some processes"))
    print(bytecode_note)
    print(f"{'step':<36}" + "".join(f"{label:>26}" for label, _ in modes))
    for step in steps:
        cells = []
        for label, _ in modes:
            values = [r["ms"].get(step, 0.0) for r in results[label]]
            cells.append(f"{statistics.median(values):.1f} ({min(values):.1f})")
        print(f"{step:<36}" + "".join(f"{c:>26}" for c in cells))
    for label, _ in modes:
        loaded = {json.dumps(r["loaded"], sort_keys=True) for r in results[label]}
        hits = {r["hits"] for r in results[label]}
        print(f"{label}: JIT cache hits per process {sorted(hits)}; loaded: "
              + "; ".join(sorted(loaded)))
        want = "ptx" if label.startswith("ptx") else "cubin"
        if any(source != want for r in results[label] for source, _ in r["loaded"].values()):
            print(f"WARNING: mode '{label}' did not load the {want} in every process (no ptxas "
                  "where the packages were compiled? set DNNC_PTXAS or install "
                  "nvidia-cuda-nvcc): its figures are not what its name says")
    if args.profile:
        profiled = PROBE % {"stub": stub, "arch": args.arch, "bench": BENCH,
                            "profile": args.profile}
        print(f"\n{modes[0][0]}: the layernorm's build_plans under cProfile, in a new process")
        print(probe(profiled, modes[0][1], cache_dir)["profile"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"where": where, "torch": torch.__version__, "runs": args.runs,
                       "bytecode": sorted(bytecode),
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
