"""The tile of a window program: the outputs a thread of a forward pool owns
per spatial dim. It imports no MLIR, so that the heuristics
(dnnc/heuristics/window.py), which choose the tile, read it as the forward
emitter (forward.py) does; the rest of the window programs is listed in
__init__.py.
"""


def spatial_tile(tile, dims):
    """A config's ``tile`` as outputs per spatial dim of a ``dims``-D
    window: a shorter tile names the last dims (``(2,)`` is 2 along W), the
    others take 1; () is one output a thread."""
    tile = list(tile or ())[-dims:] if dims else []
    return [1] * (dims - len(tile)) + [max(1, int(t)) for t in tile]
