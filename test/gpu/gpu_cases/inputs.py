"""A case's input data: drawn for its graph's inputs, and stored as bits
where NumPy has no such type."""

import numpy as np

from .case import BF16, BOOL, E4M3, E5M2


def storage(array, dtype):
    """(array as stored in the .npz, the NumPy dtype it is stored as)."""
    if dtype is BOOL:
        return array.astype(np.bool_), "bool"
    if dtype is BF16:
        return array.view(np.uint16), "uint16"
    if dtype in (E4M3, E5M2):
        return array.view(np.uint8), "uint8"
    return array, str(array.dtype)


def _broadcast(x, t):
    """``x`` with one value along each dim ``t`` broadcasts (stride 0, more
    than one element): one element is stored there, and the runtime refuses
    a NumPy array whose values differ along it (dnnc_runtime/host_arrays.py)."""
    for d, (n, stride) in enumerate(zip(t.dim, t.get_stride())):
        if stride == 0 and n > 1:
            x = np.broadcast_to(np.take(x, [0], axis=d), x.shape).copy()
    return x


def make_inputs(case, g):
    """The values of ``g``'s inputs by name, drawn as ``case`` says from a
    generator seeded with ``case.seed``; then those ``case.derived``
    computes from them (drawn first, so that the draws of the others do
    not depend on it), rounded to their types as the others are."""
    rng = np.random.default_rng(case.seed)
    values = {}
    for t in g.inputs:
        dtype = t.get_data_type()
        if dtype is BOOL:
            values[t.name] = rng.random(t.dim) < 0.5
            continue
        if t.name in case.fixed:
            size = int(np.prod(t.dim))
            x = np.resize(np.asarray(case.fixed[t.name], np.float64), size).reshape(t.dim)
        elif t.name in case.positive:
            x = rng.uniform(0.5, 2.0, t.dim)
        elif t.name in case.integers:
            x = rng.integers(-2, 3, t.dim).astype(np.float64)
        elif dtype.is_integer and dtype.itemsize == 1:
            # int8 / uint8: every value of the type, both ends included.
            info = np.iinfo(dtype.numpy)
            x = rng.integers(info.min, info.max + 1, t.dim).astype(np.float64)
        else:
            mean, std = case.normal.get(t.name, (0.0, case.scale))
            x = rng.standard_normal(t.dim) * std + mean
        # Values representable in the input's type: what the GPU reads is
        # what the reference reads.
        values[t.name] = _broadcast(x.astype(np.float32).astype(dtype.numpy), t)
    if case.derived is not None:
        types = {t.name: t.get_data_type() for t in g.inputs}
        for name, x in case.derived(values).items():
            values[name] = np.asarray(x, np.float64).astype(np.float32).astype(
                types[name].numpy)
    return values
