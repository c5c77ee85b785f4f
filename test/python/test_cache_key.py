"""The JIT cache key of a dnnc.Graph (Graph.serialize, cache.key_for_graph).

* Building the same graph again gives the same serialization and key, in
  this process and in another one with another string-hash seed.
* Graphs that differ in one thing each (a name, a dim, a stride, a data type,
  an attribute, an operand's order, the outputs) print different MLIR, and
  every one of them has its own key.
* Serializing a graph imports no MLIR.

The hit in a fresh process that imports no MLIR at all is in test_cache.py.
"""

import json
import math
import os
import subprocess
import sys

import dnnc
from dnnc import cache, compiler
from dnnc.dialect.types import data_type as dt

HERE = os.path.dirname(os.path.abspath(__file__))


def build(name="main", io=dt.HALF, intermediate=dt.FLOAT, compute=dt.FLOAT, x_name="x",
          x_dim=(4, 8), x_stride=None, x_type=None, mm_name=None, mm_compute=None,
          swap_add=False, slope=0.01, activation="leaky_relu", softmax_axis=1,
          y_name=None, y_stride=None, y_type=None, outputs=("y", "z")):
    """matmul -> add -> activation -> softmax; every argument changes one thing."""
    g = dnnc.Graph(name=name, io_data_type=io, intermediate_data_type=intermediate,
                   compute_data_type=compute)
    x = g.tensor(name=x_name, dim=list(x_dim), stride=x_stride, data_type=x_type)
    w = g.tensor(name="w", dim=[8, 16])
    b = g.tensor(name="b", dim=[1, 16])
    m = g.matmul(x, w, compute_data_type=mm_compute, name=mm_name)
    s = g.add(b, m) if swap_add else g.add(m, b)
    if activation == "leaky_relu":
        y = g.leaky_relu(s, negative_slope=slope)
    else:
        y = getattr(g, activation)(s)
    z = g.softmax(y, axis=softmax_axis)
    tensors = {"m": m, "y": y, "z": z}
    for t in outputs:
        tensors[t].set_output(True)
    if y_name is not None:
        y.set_name(y_name)
    if y_stride is not None:
        y.set_stride(y_stride)
    if y_type is not None:
        y.set_data_type(y_type)
    return g


# One change each from build(): what it is, and the arguments that make it.
VARIANTS = {
    "graph name": dict(name="other"),
    "input name": dict(x_name="x2"),
    "input dim": dict(x_dim=(2, 8)),
    "input stride": dict(x_stride=[1, 4]),
    "input data type": dict(x_type=dt.BFLOAT16),
    "io data type": dict(io=dt.FLOAT),
    "intermediate data type": dict(intermediate=dt.HALF),
    "graph compute data type": dict(compute=dt.TF32),
    "op compute data type": dict(mm_compute=dt.TF32),
    "op name": dict(mm_name="mm"),
    "operand order": dict(swap_add=True),
    "float attribute, one ulp": dict(slope=math.nextafter(0.01, 1.0)),
    "int attribute": dict(softmax_axis=0),
    "op": dict(activation="relu"),
    "output name": dict(y_name="out"),
    "output stride": dict(y_stride=[1, 4]),
    "output data type": dict(y_type=dt.BFLOAT16),
    "one more output": dict(outputs=("y", "z", "m")),
    "output order": dict(outputs=("z", "y")),
}


def opts(arch="sm_90a"):
    return compiler.Options(target="cuda", arch=arch)


def test_same_graph_same_key():
    a, b = build(), build()
    assert a.serialize() == b.serialize()
    assert cache.key_for_graph(a, opts()) == cache.key_for_graph(b, opts())
    assert cache.key_for_graph(a, opts()) != cache.key_for_graph(a, opts("sm_80"))
    form = json.loads(a.serialize())
    assert [n["op"] for n in form["nodes"]] == ["matmul", "add", "leaky_relu", "softmax"]
    assert form["outputs"] == ["op:2:y", "op:3:y"]


def test_each_difference_changes_the_mlir_and_the_key():
    from dnnc import graph_mlir

    base = build()
    base_mlir = graph_mlir.to_mlir(base)
    keys = {"base": cache.key_for_graph(base, opts())}
    for what, change in VARIANTS.items():
        g = build(**change)
        # Each variant is a different compilation, not just a different Graph.
        assert graph_mlir.to_mlir(g) != base_mlir, f"{what}: the same MLIR as the base"
        keys[what] = cache.key_for_graph(g, opts())
    same = {k for k in keys if k != "base" and keys[k] == keys["base"]}
    assert not same, f"the key ignores: {', '.join(sorted(same))}"
    assert len(set(keys.values())) == len(keys)


def test_graph_and_module_keys_differ():
    from dnnc import graph_mlir

    g = build()
    assert cache.key_for_graph(g, opts()) != cache.key_for(graph_mlir.to_mlir(g), opts())


def test_infinite_constant_serializes():
    g = dnnc.Graph(io_data_type=dt.FLOAT)
    x = g.tensor(name="x", dim=[2, 3])
    g.max(x, g.constant(-math.inf)).set_output(True)
    h = dnnc.Graph(io_data_type=dt.FLOAT)
    y = h.tensor(name="x", dim=[2, 3])
    h.max(y, h.constant(-1e308)).set_output(True)
    assert "-inf" in g.serialize()
    assert cache.key_for_graph(g, opts()) != cache.key_for_graph(h, opts())


KEY_IN_A_CHILD = """
import sys
sys.path.insert(0, {here!r})
import test_cache_key as t
from dnnc import cache
g = t.build()
print("mlir" in sys.modules, cache.key_for_graph(g, t.opts()))
"""


def test_key_is_the_same_in_every_process_and_needs_no_mlir():
    script = KEY_IN_A_CHILD.format(here=HERE)
    outs = set()
    for seed in ("1", "2"):  # str hashes are salted per process; the key must not be
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONHASHSEED=seed), check=True)
        outs.add(run.stdout.strip())
    assert outs == {f"False {cache.key_for_graph(build(), opts())}"}
