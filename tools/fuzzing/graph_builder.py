"""Configurations -> ``Graph`` calls (the build side; needs dnnc).

Each configuration's tensors and results take its ``c<index>_`` prefix,
so that many share one graph; ``add`` returns the index entries of its
outputs (dims, strides, type as the graph has them), which the runner
needs without dnnc.
"""

import dnnc
from dnnc.dialect.types import data_type

from .program import prefixed

TYPES = {"f32": data_type.FLOAT, "f16": data_type.HALF, "bf16": data_type.BFLOAT16}


def add(g, config):
    """Add ``config``'s calls to graph ``g``; return {output name: entry}."""
    tensors = {}
    for name, spec in config["tensors"].items():
        tensors[name] = g.tensor(name=prefixed(config, name), dim=spec["dims"],
                                 stride=spec["strides"], data_type=TYPES[spec["dtype"]])

    def arg(value):
        if isinstance(value, list):
            return [tensors[v] for v in value]
        return tensors[value]
    for call in config["calls"]:
        args = {key: arg(value) for key, value in call["args"].items()}
        results = getattr(g, call["op"])(**args, **call["attrs"])
        if not isinstance(results, tuple):
            results = (results,)
        for name, t in zip(call["out"], results):
            if name is not None:
                tensors[name] = t
    entries = {}
    for name, spec in config["outputs"].items():
        t = tensors[name]
        t.set_name(prefixed(config, name))
        # "keep": the type the op gives (statistics are f32).
        if spec.get("dtype") != "keep":
            t.set_data_type(TYPES[spec.get("dtype", config["dtype"])])
        if spec["strides"] is not None:
            t.set_stride(spec["strides"])
        t.set_output(True)
        entries[name] = {"name": t.name, "dims": [int(d) for d in t.dim],
                         "strides": [int(s) for s in t.get_stride()],
                         "dtype": t.get_data_type().mlir}
    return entries


def graph(configs):
    """One graph holding every configuration of ``configs``, and the output
    entries of each."""
    g = dnnc.Graph()
    return g, [add(g, c) for c in configs]
