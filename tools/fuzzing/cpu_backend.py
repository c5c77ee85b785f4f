"""``fuzz run --cpu``: the packages' configurations run on dnnc's CPU back
end instead of the GPU, through the same runner and comparison (the
graph of each package is rebuilt from the index and compiled for the
CPU; the package file itself is not read). It checks the fuzzer's whole
loop and the CPU back end on machines without a GPU; it needs dnnc, which
``fuzz run`` does not.
"""

import json
import os

import numpy as np
import torch

from .graph_builder import graph


def _numpy(t):
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return t.float().numpy().astype(ml_dtypes.bfloat16)
    return t.contiguous().numpy()


def loader(folder):
    """path of a package of ``folder`` -> a callable like the runtime's
    executable, on the CPU back end."""
    with open(os.path.join(folder, "index.json")) as f:
        packages = {p["package"]: p["configs"] for p in json.load(f)["packages"]}

    def load(path):
        g, _ = graph(packages[os.path.basename(path)])
        exe = g.compile("cpu")

        def run(outputs=None, **inputs):
            results = exe(**{name: _numpy(t) for name, t in inputs.items()})
            for name, out in outputs.items():
                value = np.asarray(results[name])
                if value.dtype.name == "bfloat16":
                    value = value.astype(np.float32)
                # A rank-0 result comes back with shape [1].
                out.copy_(torch.from_numpy(np.ascontiguousarray(value)).reshape(out.shape))
        return run
    return load
