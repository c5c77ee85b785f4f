"""Host time of ``dnnc.frontend``'s ``execute`` on a built plan, per call.

Two plans, written as cudnn-frontend's samples write them: a layernorm
(training: Y, mean and inv_variance of x ``[rows, hidden, 1, 1]`` bf16 in
channels-last strides, epsilon a pass-by-value CPU tensor) and an SDPA
(inference, q, k, v ``[b, h, s, d]`` bf16, ``attn_scale`` a float). Each is
built once; then calls are timed back to back with ``time.perf_counter_ns``
around a batch (no synchronization inside it), and the table gives the
host microseconds per call, the best and the median of the batches, and
the best by the thread's CPU clock (``cpu``: what the call cost its thread,
less any wait for a core on a shared machine):

- ``execute``: ``g.execute(variant_pack, workspace, handle=handle)``, the
  variant pack keyed by tensor, as cudnn-frontend's code writes it;
- ``execute (uids)``: the same pack keyed by uid;
- ``Executable``: the runtime's own call, ``exe(*inputs, outputs=[...],
  stream=s)``, that ``execute`` ends in;
- ``launch only``: ``cuda.launch_all`` of the plan's kernels, the driver
  calls alone: the floor the rows above add to.

With a CUDA GPU (and CUDA PyTorch) everything is real: the plans compile
for the GPU through the JIT cache and the calls launch their kernels. Without
one (``--stub``, the default there) the plans compile for ``--arch``
(sm_90a; MLIR needed once, the JIT cache keeps them), the CUDA driver is a
stub at cuda-python's boundary (every driver function returns success and
does nothing, so ``launch only`` is near zero) and torch CPU tensors pass
for CUDA ones: the figures are dnnc's own host work, the driver's left out.

Then ``--builds N`` new processes (no torch) each import dnnc.frontend
and build a layernorm and an SDPA graph seen before (epsilon and the scale
as numbers, so that ``build_plans`` compiles, from the warm JIT cache; the
first process fills it): the second table gives the import and each
``build_plans`` in milliseconds, best and median wall time and the best
CPU time, and says whether every build was a cache hit and whether MLIR
or libLLVM.so was loaded. With a GPU the processes find it as user code
does (the arch, and the driver's first cuInit in the first build).

Usage::

    python bench/host_overhead.py [--calls N] [--rounds R] [--builds N] [--json FILE]
    python bench/host_overhead.py --stub      # a CPU figure even with a GPU
    python bench/host_overhead.py --save-plans DIR --builds 0   # where MLIR is
    python bench/host_overhead.py --plans DIR --builds 0        # a GPU machine without it

Before the new processes dnnc's bytecode is compiled, as an installed
dnnc has it (``--bytecode as-is`` times the tree as it is; see
``compile_bytecode``).

``--plans`` runs serialized plans (``pygraph.serialize``): the layernorm's
epsilon is compiled in then, so its variant pack has no pass-by-value
tensor.

cudnn-frontend's own ``execute`` costs about 30 us per call (the issue
this answers: 32); the target for dnnc's is under 10 us.
"""

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in (ROOT, os.path.join(ROOT, "runtime")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

STUB_STREAM = 0x5000     # the stream handle the stubbed calls name


# -- the plans ---------------------------------------------------------------------

def layernorm_plan(cudnn, torch, device, sm_version, rows=2048, hidden=1024):
    """(graph, variant pack by tensor, by uid): cudnn-frontend's layernorm form."""
    g = cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16,
                      intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, sm_version=sm_version,
                      target="cuda", name="layernorm")
    x = torch.randn(rows, hidden, 1, 1, device=device).to(torch.bfloat16)
    x = x.to(memory_format=torch.channels_last)
    scale = torch.randn(1, hidden, 1, 1, device=device).to(torch.bfloat16)
    bias = torch.randn(1, hidden, 1, 1, device=device).to(torch.bfloat16)
    eps = torch.full((1, 1, 1, 1), 1e-5)
    # A CPU tensor, and so shown under the stub (whose class attributes make
    # every tensor say cuda:0; on real torch the class's descriptor wins).
    eps.__dict__["device"] = torch.device("cpu")
    X, S, B = g.tensor_like(x), g.tensor_like(scale), g.tensor_like(bias)
    E = g.tensor(name="epsilon", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], is_pass_by_value=True,
                 data_type=cudnn.data_type.FLOAT)
    Y, mean, inv_var = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING,
                                   input=X, scale=S, bias=B, epsilon=E, name="LN")
    Y.set_output(True).set_data_type(cudnn.data_type.BFLOAT16)
    mean.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    inv_var.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    _build(cudnn, g)
    y = torch.empty_like(x)
    m = torch.empty(rows, 1, 1, 1, device=device)
    iv = torch.empty(rows, 1, 1, 1, device=device)
    pack = {X: x, S: scale, B: bias, E: eps, Y: y, mean: m, inv_var: iv}
    return g, pack


def sdpa_plan(cudnn, torch, device, sm_version, b=4, h=16, s=1024, d=128):
    """(graph, variant pack by tensor): cudnn-frontend's SDPA inference form."""
    g = cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16,
                      intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, sm_version=sm_version,
                      target="cuda", name="sdpa")
    q, k, v = (torch.randn(b, h, s, d, device=device).to(torch.bfloat16) for _ in range(3))
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    O, _ = g.sdpa(name="sdpa", q=Q, k=K, v=V, is_inference=True, attn_scale=d ** -0.5,
                  use_causal_mask=True)
    O.set_output(True).set_dim([b, h, s, d]).set_stride(list(q.stride()))
    _build(cudnn, g)
    o = torch.empty_like(q)
    return g, {Q: q, K: k, V: v, O: o}


_TORCH_TYPES = {"BFLOAT16": "bfloat16", "HALF": "float16", "FLOAT": "float32"}


def saved_plan(cudnn, torch, device, path):
    """(graph, variant pack by tensor) of a plan ``--save-plans`` wrote: the
    graph deserialized (no compiler needed), a random tensor per tensor."""
    g = cudnn.pygraph()
    with open(path, "rb") as f:
        g.deserialize(f.read())
    plan = g._last_plan
    pack = {}
    for t in (*plan.inputs, *plan.outputs):
        dtype = getattr(torch, _TORCH_TYPES[t.get_data_type().name])
        pack[t] = torch.empty_strided(t.get_dim(), t.get_stride(), dtype=dtype,
                                      device=device).normal_()
    return g, pack


def _build(cudnn, g):
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()


# -- timing ------------------------------------------------------------------------

def per_call_us(fn, calls, rounds):
    """(best, median, best thread CPU) over ``rounds`` batches of the host
    microseconds per call. The thread's CPU clock leaves out the time the
    thread waited for a core (a shared machine)."""
    for _ in range(min(calls, 200)):
        fn()
    wall, cpu = [], []
    clock, thread_clock = time.perf_counter_ns, time.thread_time_ns
    for _ in range(rounds):
        start, start_cpu = clock(), thread_clock()
        for _ in range(calls):
            fn()
        cpu.append((thread_clock() - start_cpu) / calls / 1e3)
        wall.append((clock() - start) / calls / 1e3)
    return min(wall), statistics.median(wall), min(cpu)


def rows_of(name, g, pack, stream, handle):
    """The rows timed for one plan: (label, function)."""
    from dnnc_runtime import cuda

    workspace = None
    by_uid = {t.get_uid(): value for t, value in pack.items()}
    g.execute(pack, workspace, handle=handle)   # compiles the plan (scalars known now)
    plan = g._last_plan
    ins = [pack[t] for t in plan.inputs]
    outs = [pack[t] for t in plan.outputs]
    exe = plan.exe
    exe(*ins, outputs=outs, stream=stream)
    launches = exe._launch_args
    return [
        (f"{name}: execute", lambda: g.execute(pack, workspace, handle=handle)),
        (f"{name}: execute (uids)", lambda: g.execute(by_uid, workspace, handle=handle)),
        (f"{name}: Executable", lambda: exe(*ins, outputs=outs, stream=stream)),
        (f"{name}: launch only", lambda: cuda.launch_all(launches, stream)),
    ], len(launches)


# -- the stub driver (no GPU) ------------------------------------------------------

class _Names:
    """An enum namespace of the stub: every member is its own name."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return name


class _Record:
    """A driver struct (CUlaunchConfig, CUlaunchAttribute): fields set freely."""

    def __init__(self, *args):
        self.value = _Any()


class _Any:
    pass


class _Handle(int):
    """A driver handle (CUcontext, CUstream): an int, as the binding's convert."""


class _TensorMap:
    def __init__(self):
        import ctypes

        self._bytes = ctypes.create_string_buffer(128)

    def getPtr(self):
        import ctypes

        return ctypes.addressof(self._bytes)


class StubDriver:
    """cuda-python's ``cuda.bindings.driver``, every function a success that
    does nothing: what dnnc_runtime.cuda calls, each returning
    ``(CUresult, *values)`` as the binding does. Memory is never touched."""

    SUCCESS = 0

    def __init__(self, capability=(9, 0)):
        self.capability = capability
        self.context = _Handle(1)
        self.next_address = 0x7F00_0000_0000
        self.launches = 0
        for name in ("CUresult", "CUdevice_attribute", "CUjit_option", "CUfunction_attribute",
                     "CUstreamCaptureStatus", "CUevent_flags", "CUlaunchAttributeID",
                     "CUtensorMapDataType", "CUtensorMapInterleave", "CUtensorMapSwizzle",
                     "CUtensorMapL2promotion", "CUtensorMapFloatOOBfill"):
            setattr(self, name, _Names())
        self.CUresult.CUDA_SUCCESS = self.SUCCESS
        self.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE = "NONE"
        self.CUlaunchConfig = self.CUlaunchAttribute = _Record
        self.CUstream = _Handle
        self.cuuint64_t = self.cuuint32_t = int

    def cuInit(self, flags):
        return (0,)

    def cuGetErrorString(self, status):
        return (0, b"stub")

    def cuDeviceGetCount(self):
        return (0, 1)

    def cuDeviceGet(self, index):
        return (0, _Handle(index))

    def cuDeviceGetAttribute(self, attribute, device):
        values = {"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": self.capability[0],
                  "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": self.capability[1],
                  "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 227 * 1024}
        return (0, values.get(attribute, 0))

    def cuDeviceGetName(self, length, device):
        return (0, b"stub driver\0")

    def cuDevicePrimaryCtxRetain(self, device):
        return (0, self.context)

    def cuCtxGetCurrent(self):
        return (0, self.context)

    def cuCtxGetDevice(self):
        return (0, 0)

    def cuCtxSetCurrent(self, context):
        return (0,)

    def cuCtxSynchronize(self):
        return (0,)

    def cuModuleLoadDataEx(self, image, n, options, values):
        return (0, "module")

    def cuModuleUnload(self, module):
        return (0,)

    def cuModuleGetFunction(self, module, name):
        return (0, name)

    def cuFuncSetAttribute(self, function, attribute, value):
        return (0,)

    def cuMemAlloc(self, nbytes):
        address = self.next_address
        self.next_address += (nbytes + 511) // 512 * 512 + 512
        return (0, address)

    def cuMemFree(self, address):
        return (0,)

    def cuMemsetD8Async(self, address, value, nbytes, stream):
        return (0,)

    def cuStreamIsCapturing(self, stream):
        return (0, "NONE")

    def cuStreamSynchronize(self, stream):
        return (0,)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        return (0,)

    def cuLaunchKernelEx(self, config, f, params, extra):
        return (0,)

    def cuTensorMapEncodeTiled(self, *args):
        return (0, _TensorMap())

    def cuTensorMapEncodeIm2col(self, *args):
        return (0, _TensorMap())


def install_stub(torch):
    """The stub driver in dnnc_runtime.cuda, and torch CPU tensors passing for
    cuda:0 ones (class attributes, as cheap to read as torch's own)."""
    from dnnc_runtime import cuda, executable

    cuda._d, cuda._SUCCESS, cuda._initialized = StubDriver(), StubDriver.SUCCESS, False
    cuda._devices.clear()
    cuda._stream_objects.clear()
    cuda0 = torch.device("cuda", 0)
    torch.Tensor.is_cuda = True
    torch.Tensor.device = cuda0
    torch.Tensor.get_device = lambda self: 0
    torch._C._cuda_getCurrentRawStream = lambda index: STUB_STREAM
    executable._raw_stream = None
    executable._torch_device = lambda index: "cpu"
    empty, empty_strided = torch.empty, torch.empty_strided

    def host(make):
        def allocate(*args, device=None, **kwargs):
            return make(*args, **kwargs)
        return allocate

    torch.empty, torch.empty_strided = host(empty), host(empty_strided)


# -- build_plans of a graph seen before, in a new process --------------------------

def compile_bytecode(mode="compile"):
    """Make sure new processes read dnnc's bytecode, as an installed dnnc's
    (pip compiles it at install) and return a line saying what they read.

    A source tree without ``__pycache__``, where PYTHONDONTWRITEBYTECODE is
    set, has every new process compile dnnc's sources again: on the build
    machine that took ``import dnnc.frontend`` from 11 to 51 ms and a
    layernorm's ``build_plans`` from 8 to 32 ms of CPU time (torch imported
    first; docs/frontend.md, "Host overhead"). ``mode`` "compile" compiles
    what lacks bytecode (``compileall``) first; "as-is" leaves the tree as
    it is, to time what a process finds there."""
    import compileall
    import importlib.util

    roots = [os.path.join(ROOT, "dnnc"), os.path.join(ROOT, "runtime", "dnnc_runtime")]
    if mode == "compile":
        for root in roots:
            compileall.compile_dir(root, quiet=1)
    sources = [os.path.join(d, f) for root in roots for d, _, files in os.walk(root)
               for f in files if f.endswith(".py")]
    have = sum(os.path.exists(importlib.util.cache_from_source(f)) for f in sources)
    write = "not written" if sys.flags.dont_write_bytecode else "written on import"
    return (f"dnnc's bytecode: {have} of {len(sources)} modules compiled ({mode}); "
            f"missing bytecode is {write} (PYTHONDONTWRITEBYTECODE)")


# Run by ``python -c`` in a new process: import dnnc.frontend, then build the
# layernorm and the SDPA graph (epsilon and the scale as numbers, so that
# build_plans compiles: with the JIT cache warm, it reads the entry) and
# print the times and whether MLIR or libLLVM.so came in. No torch.
FRESH_BUILD = r"""
import json, sys, time
ARCH = %(sm_version)r
w0, c0 = time.perf_counter(), time.process_time()
import dnnc.frontend as cudnn
w1, c1 = time.perf_counter(), time.process_time()
times = {"import": (w1 - w0, c1 - c0)}

def graph():
    return cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16,
                         intermediate_data_type=cudnn.data_type.FLOAT,
                         compute_data_type=cudnn.data_type.FLOAT, target="cuda", sm_version=ARCH)

def layernorm(rows=2048, hidden=1024):
    g = graph()
    cl = [hidden, 1, hidden, hidden]
    x = g.tensor(name="x", dim=[rows, hidden, 1, 1], stride=cl)
    s = g.tensor(name="scale", dim=[1, hidden, 1, 1], stride=cl)
    b = g.tensor(name="bias", dim=[1, hidden, 1, 1], stride=cl)
    y, m, v = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=x,
                          scale=s, bias=b, epsilon=1e-5)
    y.set_output(True)
    m.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    v.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    return g

def sdpa(b=4, h=16, s=1024, d=128):
    g = graph()
    q, k, v = (g.tensor(name=n, dim=[b, h, s, d]) for n in "qkv")
    o, _ = g.sdpa(q=q, k=k, v=v, is_inference=True, attn_scale=d ** -0.5, use_causal_mask=True)
    o.set_output(True).set_dim([b, h, s, d]).set_stride([h * s * d, s * d, d, 1])
    return g

for name, make in (("layernorm", layernorm), ("sdpa", sdpa)):
    w0, c0 = time.perf_counter(), time.process_time()
    g = make()
    g.validate(); g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A]); g.check_support(); g.build_plans()
    w1, c1 = time.perf_counter(), time.process_time()
    times[name] = (w1 - w0, c1 - c0)
from dnnc import cache
times["hits"] = cache.default().stats.hits
times["mlir"] = any(m == "mlir" or m.startswith("mlir.") for m in sys.modules)
times["llvm"] = "libLLVM" in open("/proc/self/maps").read()
print(json.dumps(times))
"""


def fresh_builds(runs, sm_version):
    """Rows of the new-process build times: (label, best ms, median ms, best
    CPU ms), and whether a warm process imported MLIR or loaded libLLVM."""
    import subprocess

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [ROOT, os.path.join(ROOT, "runtime")] + [p for p in [env.get("PYTHONPATH")] if p])
    script = FRESH_BUILD % {"sm_version": sm_version}
    results = []
    for i in range(runs + 1):                     # the first fills the JIT cache
        out = subprocess.run([sys.executable, "-c", script], env=env, check=True,
                             capture_output=True, text=True).stdout
        if i:
            results.append(json.loads(out.strip().splitlines()[-1]))
    rows = []
    for key, label in (("import", "import dnnc.frontend"), ("layernorm", "layernorm build"),
                       ("sdpa", "sdpa build")):
        wall = sorted(r[key][0] * 1e3 for r in results)
        cpu = min(r[key][1] * 1e3 for r in results)
        rows.append((label, wall[0], statistics.median(wall), cpu))
    warm = all(r["hits"] == 2 for r in results)
    heavy = any(r["mlir"] or r["llvm"] for r in results)
    return rows, warm, heavy


# -- main --------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch")
    parser.add_argument("--rounds", type=int, default=15, help="batches per row")
    parser.add_argument("--stub", action="store_true",
                        help="stub the driver even when a GPU is present")
    parser.add_argument("--arch", default="sm_90a", help="the arch compiled for with --stub")
    parser.add_argument("--builds", type=int, default=5,
                        help="new processes timing build_plans of graphs seen before (0: none)")
    parser.add_argument("--save-plans", metavar="DIR",
                        help="write the plans built here (serialized) to DIR")
    parser.add_argument("--plans", metavar="DIR",
                        help="time the plans --save-plans wrote (no compiler needed)")
    parser.add_argument("--bytecode", choices=("compile", "as-is"), default="compile",
                        help="compile dnnc's bytecode before the new processes (as an "
                             "installed dnnc has it), or time the tree as it is")
    parser.add_argument("--json", help="write the rows here too")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("this benchmark needs PyTorch")
    import dnnc.frontend as cudnn

    stub = args.stub or not torch.cuda.is_available()
    if stub:
        install_stub(torch)
        device, stream = "cpu", STUB_STREAM
        digits = args.arch[3:].rstrip("a")
        sm_version = int(digits)
        where = f"CPU, driver stubbed (plans for {args.arch})"
    else:
        device, sm_version = "cuda", None
        stream = torch.cuda.current_stream().cuda_stream
        where = f"{torch.cuda.get_device_name()}, real launches"
    handle = cudnn.create_handle()
    cudnn.set_stream(handle, stream)

    rows = []
    kernels = {}
    for name, make in (("layernorm", layernorm_plan), ("sdpa", sdpa_plan)):
        if args.plans:
            g, pack = saved_plan(cudnn, torch, device, os.path.join(args.plans, name + ".plan"))
        else:
            g, pack = make(cudnn, torch, device, sm_version)
        plan_rows, kernels[name] = rows_of(name, g, pack, stream, handle)
        rows += plan_rows
        if args.save_plans:
            os.makedirs(args.save_plans, exist_ok=True)
            with open(os.path.join(args.save_plans, name + ".plan"), "wb") as f:
                f.write(bytes(g.serialize()))
    if not stub:
        torch.cuda.synchronize()

    print(f"{where}; torch {torch.__version__}; {args.rounds} batches of {args.calls} calls; "
          f"host microseconds per call")
    print(f"{'call':<28}{'best':>8}{'median':>8}{'cpu':>8}")
    results = []
    for label, fn in rows:
        best, median, cpu = per_call_us(fn, args.calls, args.rounds)
        if not stub:
            torch.cuda.synchronize()
        results.append({"call": label, "best_us": round(best, 2), "median_us": round(median, 2),
                        "cpu_us": round(cpu, 2)})
        print(f"{label:<28}{best:8.2f}{median:8.2f}{cpu:8.2f}")
    print("kernels per call: " + ", ".join(f"{k} {n}" for k, n in kernels.items()))
    builds = []
    if args.builds:
        bytecode = compile_bytecode(args.bytecode)
        rows, warm, heavy = fresh_builds(args.builds, sm_version)
        print(f"\nbuild_plans of graphs seen before, {args.builds} new processes (no torch), "
              f"milliseconds; every build a JIT cache hit: {warm}; MLIR or libLLVM.so loaded: "
              f"{heavy}; {bytecode}")
        print(f"{'step':<28}{'best':>8}{'median':>8}{'cpu':>8}")
        for label, best, median, cpu in rows:
            builds.append({"step": label, "best_ms": round(best, 1),
                           "median_ms": round(median, 1), "cpu_ms": round(cpu, 1)})
            print(f"{label:<28}{best:8.1f}{median:8.1f}{cpu:8.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"where": where, "torch": torch.__version__, "stub": stub,
                       "kernels": kernels, "rows": results, "builds": builds}, f, indent=1)


if __name__ == "__main__":
    main()
