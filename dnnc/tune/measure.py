"""Timing a compiled candidate on the GPU, for the tuner.

    inputs = random_inputs(package.manifest)      # NumPy, never zeros
    ms = time_kernels(package, inputs)            # {kernel function: ms}
    outs = run(package, inputs)                   # NumPy outputs

These are the tuner's default ``timer`` and ``runner``; tests pass fakes.
They go through the runtime (dnnc_runtime), as a user's call does:
``Executable.time`` gives the median of each launch over ``repeat`` runs,
and a kernel function's time is the sum of its launches' (a split-K GEMM is
two). Inputs are uniform in [0.5, 1.5) with a random sign for floats (no
zeros, so no kernel runs a fast path that real data would not; the sign
stays positive for inputs of ops that want it: log, sqrt...); integers are
1 to 3, booleans random.
"""

import numpy as np

REPEAT, WARMUP = 50, 10

# Anchors and ops whose inputs should stay positive (a NaN is no faster, but a
# tuned config should be timed on the data it will see).
POSITIVE_OPS = ("log", "sqrt", "rsqrt", "pow", "div", "reciprocal")


def random_inputs(manifest, seed=0, positive=False):
    """One NumPy array per graph input of ``manifest`` (a .dnnpkg manifest),
    with its dims and element type."""
    from dnnc_runtime import binding

    rng = np.random.default_rng(seed)
    arrays = []
    for spec in manifest["inputs"]:
        dims, dtype = tuple(spec["dims"]), spec["dtype"]
        np_type = binding.numpy_dtype(dtype, spec["name"])
        if dtype == "i1":
            a = rng.random(dims) < 0.5
        elif np.issubdtype(np.dtype(np_type), np.integer):
            a = rng.integers(1, 4, size=dims)
        else:
            a = rng.uniform(0.5, 1.5, size=dims)
            if not positive:
                a = a * np.where(rng.random(dims) < 0.5, -1.0, 1.0)
        arrays.append(np.asarray(a).astype(np_type))
    return arrays


def _executable(package):
    import dnnc_runtime

    from dnnc import cache

    return dnnc_runtime.load(cache.package_bytes(package))


def time_kernels(package, inputs, repeat=REPEAT, warmup=WARMUP):
    """{kernel function name: median ms} of ``package`` (a dnnc.artifact.Package)
    run on ``inputs``, and "total"."""
    with _executable(package) as exe:
        times = exe.time(*inputs, repeat=repeat, warmup=warmup)
        out = {"total": times.get("total", 0.0)}
        for k, label in zip(exe.plan, exe.plan.labels):
            if label in times:
                out[k.name] = out.get(k.name, 0.0) + times[label]
    return out


def run(package, inputs):
    """The outputs (NumPy arrays, in manifest order) of one call of ``package``."""
    with _executable(package) as exe:
        got = exe(*inputs)
    return list(got) if isinstance(got, tuple) else [got]


# Relative tolerance, of the largest |reference| element, by output dtype:
# a candidate differs from the heuristic's choice by its summation order.
TOLERANCE = {"f64": 1e-9, "f32": 1e-3, "tf32": 1e-2, "f16": 1e-2, "bf16": 6e-2,
             "f8E4M3FN": 0.25, "f8E5M2": 0.5}


def mismatch(manifest, got, want):
    """None when outputs ``got`` agree with ``want``; else which output
    differs and by how much."""
    for spec, g, w in zip(manifest["outputs"], got, want):
        g64 = np.asarray(g).astype(np.float64)
        w64 = np.asarray(w).astype(np.float64)
        if g64.shape != w64.shape:
            return f"output '{spec['name']}': shape {list(g64.shape)}, expected {list(w64.shape)}"
        if not g64.size:
            continue
        if not np.array_equal(np.isnan(g64), np.isnan(w64)):
            return f"output '{spec['name']}': NaN where the heuristic's config has none"
        finite = ~np.isnan(w64)
        scale = max(1.0, float(np.max(np.abs(w64[finite]), initial=0.0)))
        err = float(np.max(np.abs(g64[finite] - w64[finite]), initial=0.0))
        tol = TOLERANCE.get(spec["dtype"], 0.0) * scale
        if err > tol:
            return (f"output '{spec['name']}': max |difference| {err:.3g} from the "
                    f"heuristic's config, expected at most {tol:.3g}")
    return None


def gpu_name():
    """The name of the GPU the runtime would run on (the calling thread's
    current device, else device 0), or None when there is none."""
    try:
        from dnnc_runtime import cuda

        cuda.init()
        index = cuda.current_device_index()
        return cuda.get_device(0 if index is None else index).name
    except Exception:  # noqa: BLE001 - no runtime, no driver, no device: no name
        return None
