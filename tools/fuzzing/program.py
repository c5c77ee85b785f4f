"""The configuration format shared by the build and the run sides.

A configuration is a JSON object::

    {"family": "pointwise", "index": 17, "seed": 1, "dtype": "f16",
     "tensors": {"x": {"dims": [7, 33], "strides": [40, 1], "dtype": "f16",
                       "draw": "normal"}, ...},
     "calls": [{"op": "add", "args": {"a": "x", "b": "y"}, "attrs": {},
                "out": ["t0"]}, ...],
     "outputs": {"t0": {"strides": null}},
     "tolerance": {"t0": {"k": 40, "a": "x", "b": "w", "gain": 1.0}}}

``calls`` are ``Graph`` methods: ``args`` name earlier tensors (or lists
of them), ``attrs`` are the other keyword arguments, ``out`` names the
results in order (null for a result not kept). ``outputs`` are the results
the graph returns, with the strides they are stored with (null:
row-major), optionally their type (``dtype``; "keep": the op's) and
``precision``, the type whose tolerance applies when the kernels round
intermediates to a narrower type than the output's (an f32 attention
gradient of bf16 inputs: P and dS are rounded to bf16). ``tolerance``
marks outputs that sum ``k`` products of inputs ``a`` and ``b`` (``b``
null for a plain sum), scaled by at most ``gain``.

In a package every name is prefixed with ``c<index>_`` so that many
configurations share one graph.
"""

import shlex

FAMILIES = ("pointwise", "reduction", "softmax", "norm", "batchnorm", "pooling", "matmul",
            "conv", "attention", "transpose", "fusion")
DTYPES = ("f32", "f16", "bf16")


def prefixed(config, name):
    """The graph-wide name of tensor ``name`` of ``config``."""
    return f"c{config['index']}_{name}"


def unprefixed(config, name):
    """``name`` without ``config``'s prefix."""
    prefix = f"c{config['index']}_"
    if not name.startswith(prefix):
        raise ValueError(f"tensor '{name}': expected the prefix {prefix!r}")
    return name[len(prefix):]


def repro(family, seed, index, huge=False, arch="sm_90a", package=None, count=None):
    """The one-line command that rebuilds and reruns configuration ``index``
    of ``family``: with ``package`` (its package's name) and ``count`` (the
    configurations the build drew), the same package, packed as before
    with the same neighbours (a failure may need them: a read past a
    tensor's end finds a neighbour's NaN-poisoned output), then run with
    only ``index`` checked; without, ``index`` alone in a package."""
    out = f"/tmp/fuzz-{family}-{seed}-{index}"
    build = ["tools/fuzz", "build", "--family", family, "--seed", str(seed)]
    if package is not None:
        build += ["--count", str(count), "--package", package]
    else:
        build += ["--only", str(index)]
    build += ["--out", out]
    if huge:
        build.append("--huge")
    if arch != "sm_90a":
        build += ["--arch", arch]
    run = ["tools/fuzz", "run", out] + (["--only", str(index)] if package is not None else [])
    return f"{shlex.join(build)} && {shlex.join(run)}"


def elements(dims):
    n = 1
    for d in dims:
        n *= int(d)
    return n
