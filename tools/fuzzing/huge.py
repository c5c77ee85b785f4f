"""The ``--huge`` set: a few configurations per family (pointwise,
reduction, matmul) whose tensors hold more than 2**31 elements, so that
every index that can overflow 32 bits does. They need some 8 to 30 GB of
GPU memory each (inputs, outputs, and the float32 reference); their
inputs are drawn on the GPU (values.py), their references computed in
float32 there.
"""

from .families import _call, _config, _tensor

BIG = 2 ** 31 + 1  # elements past the largest int32


def _pointwise(i):
    return [
        _config("pointwise", "f16", {"x": _tensor([3, BIG // 3 + 1], "f16")},
                [_call("relu", {"input": "x"}, ["y"])], {"y": {"strides": None}}),
        _config("pointwise", "f16", {"a": _tensor([2, BIG // 2 + 1], "f16"),
                                     "b": _tensor([1, BIG // 2 + 1], "f16")},
                [_call("add", {"a": "a", "b": "b"}, ["y"])], {"y": {"strides": None}}),
        _config("pointwise", "bf16", {"x": _tensor([BIG + 6], "bf16")},
                [_call("silu", {"input": "x"}, ["y"])], {"y": {"strides": None}}),
    ][i % 3]


def _reduction(i):
    def one(dims, axes, mode):
        k = 1
        for a in axes:
            k *= dims[a]
        tol = {"y": {"k": k, "a": "x", "b": None, "gain": 1.0}} if mode == "sum" else {}
        return _config("reduction", "f16", {"x": _tensor(dims, "f16")},
                       [_call("reduction", {"input": "x"}, ["y"], mode=mode, axes=axes,
                              keepdims=True)], {"y": {"strides": None}}, tol)
    return [one([2, BIG // 2 + 1], [1], "sum"), one([BIG // 2 + 1, 2], [0], "max"),
            one([5, BIG // 5 + 1], [0, 1], "sum")][i % 3]


def _matmul(i):
    def one(m, k, n):
        return _config("matmul", "f16", {"a": _tensor([m, k], "f16"), "b": _tensor([k, n], "f16")},
                       [_call("matmul", {"A": "a", "B": "b"}, ["y"])], {"y": {"strides": None}},
                       {"y": {"k": k, "a": "a", "b": "b", "gain": 1.0}})
    return [one(65537, 32768, 8), one(46341, 64, 46341)][i % 2]


HUGE = {"pointwise": _pointwise, "reduction": _reduction, "matmul": _matmul}
COUNT = {"pointwise": 3, "reduction": 3, "matmul": 2}


def draw_huge(family, seed, index):
    """Configuration ``index`` of ``family``'s huge set (its values drawn
    from ``seed``)."""
    if family not in HUGE:
        raise ValueError(f"--huge: expected a family of {', '.join(HUGE)}, got {family!r}")
    config = HUGE[family](int(index))
    config.update(index=int(index), seed=int(seed), huge=True)
    return config
