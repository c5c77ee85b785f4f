"""Host time of ``dnnc.frontend``'s ``execute`` on a built plan, part by part.

What it measures: the host (CPU) time of one steady ``execute`` call,
split into the parts the call goes through. Calls are made back to back
in batches (``--calls`` in all, 10^5 by default, in ``--batches``
batches), each batch timed with ``time.perf_counter_ns`` and the thread's
CPU clock (``time.thread_time_ns``: the call's cost to its thread, less
any wait for a core on a shared machine); the table gives microseconds
per call, the best batch, the median batch and the best by CPU time.

Rows, each a part of the one above it:

- ``execute``: ``g.execute(variant_pack, None, handle=h)``, the pack keyed
  by tensor, as cudnn-frontend code writes it (``execute (uids)``: keyed by
  uid), the handle's stream set;
- ``runtime fast path``: ``exe.run_steady(tensors, stream)``, what execute
  ends in: the checks of each bound tensor (dtype, shape, strides,
  device, alignment), the argument packing and the launches;
- ``launches``: ``cuda.launch_all`` of the plan's packed launches, the
  driver calls alone.

and, derived: ``variant pack binding`` = execute - runtime fast path,
``checks and packing`` = runtime fast path - launches. Where the launches
go through libcuda itself (``dnnc_runtime/direct_launch.py``), the
launches are also timed through each entry point it offers
(``launches (no PSS) via cuLaunchKernel`` / ``via cuLaunchKernelEx``), and
the whole ``execute`` with each: the A/B of the launch entry in one run.
These rows launch every kernel without the programmatic stream
serialization (PSS) attribute, which only cuLaunchKernelEx can pass.

The plans are cudnn-frontend's forms (``bench/host_overhead.py``'s): a
layernorm in training (x ``[rows, hidden, 1, 1]`` bf16 channels-last,
scale, bias, epsilon a pass-by-value CPU tensor, outputs Y, mean and
inv_variance: seven bindings, one kernel) and an SDPA in inference (q, k,
v, O: four bindings, one kernel). Their problems are small, so that on a
GPU the kernels end before the next call is made (the host's time is
what is timed, never the GPU's); the host path does not depend on the size.

With a CUDA GPU and CUDA PyTorch everything is real: the plans compile for
the GPU through the JIT (and its cache) and every call launches. Without
one (or with ``--stub``) the plans compile for ``--arch``, the CUDA driver
is stubbed and torch CPU tensors pass for CUDA ones: cuda-python's driver
module is ``host_overhead.StubDriver`` (every function a success that does
nothing), and libcuda itself is a stub built here with the C compiler
(``cc``; its launch functions return success at once, its
``cuCtxGetCurrent`` names the stub's context), so that the ctypes calls
the runtime makes into libcuda are timed as on a GPU. These are host
figures with a stubbed driver, not GPU figures: a real driver's own work
in each launch (about 2 us on an H100's host) comes on top.

Usage::

    python bench/execute_host_path.py [--calls N] [--json FILE]   # a GPU: real launches
    python bench/execute_host_path.py --stub                      # the stubbed driver
"""

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in (ROOT, os.path.join(ROOT, "runtime"), os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import host_overhead  # noqa: E402  (the plans and the stub driver)

# libcuda's three functions the runtime calls through ctypes on a steady
# call, as no-ops: the launches succeed, the current context is the stub
# driver's (1, host_overhead.StubDriver's context handle).
STUB_LIBCUDA = r"""
typedef int CUresult;
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream,
                        void **params, void **extra) { return 0; }
CUresult cuLaunchKernelEx(const void *config, void *f, void **params, void **extra)
{ return 0; }
CUresult cuCtxGetCurrent(void **context) { *context = (void *)1; return 0; }
"""

STUB_SERIALIZATION_ID = 6   # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION


def load_stub_libcuda():
    """Build the stub libcuda (soname libcuda.so.1) and load it, so that the
    runtime's ``CDLL("libcuda.so.1")`` finds it loaded. True when the
    runtime's launches then reach the stub; otherwise (no C compiler, or a
    real libcuda loaded first, whose launches would be given the stub's
    handles) the runtime is kept off libcuda and launches through the stub
    driver module, and False is returned."""
    from dnnc_runtime import direct_launch

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is not None:
        where = tempfile.mkdtemp(prefix="dnnc-stub-libcuda-")
        source, library = os.path.join(where, "stub.c"), os.path.join(where, "libcuda.so.1")
        with open(source, "w") as f:
            f.write(STUB_LIBCUDA)
        subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1",
                        "-o", library, source], check=True)
        stub = ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
        lib = direct_launch.library()

        def address(function):
            return ctypes.cast(function, ctypes.c_void_p).value
        if lib is not None and address(lib.cuLaunchKernelEx) == address(stub.cuLaunchKernelEx):
            return True
    direct_launch._library = False          # never a real libcuda with the stub's handles
    return False


def install_stub(torch):
    """host_overhead's stub, with the launch attribute id libcuda's launches need."""
    from dnnc_runtime import cuda

    host_overhead.install_stub(torch)
    driver = cuda._d
    driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = \
        STUB_SERIALIZATION_ID
    functions = {}   # a CUfunction is a handle (an int) for libcuda's launches

    def get_function(module, name):
        return (0, host_overhead._Handle(functions.setdefault(name, 0x1000 + len(functions))))
    driver.cuModuleGetFunction = get_function


def per_call_us(fn, calls, batches):
    """(best, median, best thread CPU) microseconds per call over ``batches``
    batches of ``calls // batches`` calls (host_overhead's timing)."""
    return host_overhead.per_call_us(fn, max(1, calls // batches), batches)


def plans(cudnn, torch, device, sm_version):
    """(name, graph, pack by tensor) of the two plans, small problems."""
    g, pack = host_overhead.layernorm_plan(cudnn, torch, device, sm_version, rows=256,
                                           hidden=1024)
    yield "layernorm", g, pack
    g, pack = host_overhead.sdpa_plan(cudnn, torch, device, sm_version, b=1, h=4, s=128, d=64)
    yield "sdpa", g, pack


def launch_entries(exe):
    """{entry: packed launches} for each launch entry direct_launch offers
    (empty when the launches go through cuda-python), every launch without
    the programmatic-serialization attribute: a launch with it is always
    cuLaunchKernelEx, and a kernel that waits on the grid ahead
    (griddepcontrol.wait) is as correct launched without it (the wait is
    then a no-op), so the two entries are timed on the same launches."""
    from dnnc_runtime import cuda, direct_launch

    entries = getattr(direct_launch, "ENTRIES", ())
    if type(exe._launch_args) is tuple or not entries:
        return {}
    args = tuple((k.function, *k.dims, k.params, None) for k in exe._launches)
    ids = cuda.driver().CUlaunchAttributeID
    serialization = int(ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
    return {entry: direct_launch.pack(args, serialization, entry=entry) for entry in entries}


def rows_of(name, g, pack, stream, handle):
    """[(label, function)] of one plan, and how many kernels it launches."""
    from dnnc_runtime import cuda

    by_uid = {t.get_uid(): value for t, value in pack.items()}
    g.execute(pack, None, handle=handle)       # the first call: the general path
    plan = g._last_plan
    exe = plan.exe
    tensors = [pack[t] for t in (*plan.inputs, *plan.outputs)]
    g.execute(pack, None, handle=handle)       # and now the steady one
    if not exe.run_steady(tensors, stream):
        raise SystemExit(f"{name}: the runtime's fast path does not serve this call")
    rows = [(f"{name}: execute", lambda: g.execute(pack, None, handle=handle)),
            (f"{name}: execute (uids)", lambda: g.execute(by_uid, None, handle=handle)),
            (f"{name}: runtime fast path", lambda: exe.run_steady(tensors, stream)),
            (f"{name}: launches", lambda: cuda.launch_all(exe._launch_args, stream))]
    fast = exe._relaunch
    for entry, packed in launch_entries(exe).items():
        rows.append((f"{name}: launches (no PSS) via {entry}",
                     lambda packed=packed: cuda.launch_all(packed, stream)))
        rows.append((f"{name}: execute (no PSS) via {entry}", _swapped(fast, exe, packed, g, pack,
                                                               handle)))
    return rows, len(exe._launches)


def _swapped(fast, exe, packed, g, pack, handle):
    """execute with the fast path's launches swapped for ``packed`` (set once
    per batch, not per call: the row times execute alone)."""
    def run():
        g.execute(pack, None, handle=handle)
    def swap(launches):
        fast.launches = launches
        if getattr(fast, "launch", None) is not None:   # the fast path runs them itself
            fast.launch = launches.run
    run.before = lambda: swap(packed)
    run.after = lambda: swap(exe._launch_args)
    return run


def derived(results):
    """The parts as differences of the rows' best CPU times."""
    by = {r["call"]: r["cpu_us"] for r in results}
    out = []
    for name in dict.fromkeys(r["call"].split(":")[0] for r in results):
        execute, fast, launches = (by.get(f"{name}: {k}") for k in
                                   ("execute", "runtime fast path", "launches"))
        if None in (execute, fast, launches):
            continue
        out.append({"plan": name, "variant pack binding_us": round(execute - fast, 2),
                    "checks and packing_us": round(fast - launches, 2),
                    "launches_us": round(launches, 2)})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls per row")
    parser.add_argument("--batches", type=int, default=10, help="batches per row")
    parser.add_argument("--stub", action="store_true",
                        help="stub the driver even when a GPU is present")
    parser.add_argument("--arch", default="sm_90a", help="the arch compiled for with --stub")
    parser.add_argument("--only", help="time only the rows whose label contains this")
    parser.add_argument("--json", help="write the rows here too")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("this benchmark needs PyTorch")
    stub = args.stub or not torch.cuda.is_available()
    stub_libcuda = stub and load_stub_libcuda()
    import dnnc.frontend as cudnn

    if stub:
        install_stub(torch)
        device, stream = "cpu", host_overhead.STUB_STREAM
        sm_version = int(args.arch[3:].rstrip("a"))
        where = (f"CPU, driver stubbed (cuda-python module{' and libcuda' if stub_libcuda else ''}"
                 f"), plans for {args.arch}: host time only, not a GPU figure")
    else:
        device, sm_version = "cuda", None
        stream = torch.cuda.current_stream().cuda_stream
        where = f"{torch.cuda.get_device_name()}, real launches"
    handle = cudnn.create_handle()
    cudnn.set_stream(handle, stream)

    rows, kernels = [], {}
    for name, g, pack in plans(cudnn, torch, device, sm_version):
        plan_rows, kernels[name] = rows_of(name, g, pack, stream, handle)
        rows += plan_rows
    if not stub:
        torch.cuda.synchronize()

    n = max(1, args.calls // args.batches)
    print(f"{where}; torch {torch.__version__}; python {sys.version.split()[0]}; "
          f"{args.batches} batches of {n} calls; host microseconds per call")
    print(f"{'call':<48}{'best':>8}{'median':>8}{'cpu':>8}")
    results = []
    for label, fn in rows:
        if args.only and args.only not in label:
            continue
        getattr(fn, "before", lambda: None)()
        try:
            best, median, cpu = per_call_us(fn, args.calls, args.batches)
        finally:
            getattr(fn, "after", lambda: None)()
        if not stub:
            torch.cuda.synchronize()
        results.append({"call": label, "best_us": round(best, 3), "median_us": round(median, 3),
                        "cpu_us": round(cpu, 3)})
        print(f"{label:<48}{best:8.2f}{median:8.2f}{cpu:8.2f}")
    parts = derived(results)
    if parts:
        print("\nparts (differences of the best CPU times above), microseconds per call")
        print(f"{'plan':<12}{'pack binding':>14}{'checks+packing':>16}{'launches':>10}")
        for p in parts:
            print(f"{p['plan']:<12}{p['variant pack binding_us']:14.2f}"
                  f"{p['checks and packing_us']:16.2f}{p['launches_us']:10.2f}")
    print("kernels per call: " + ", ".join(f"{k} {v}" for k, v in kernels.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"where": where, "stub": stub, "torch": torch.__version__,
                       "python": sys.version.split()[0], "kernels": kernels, "rows": results,
                       "parts": parts}, f, indent=1)


if __name__ == "__main__":
    main()
