"""The tensor layouts every path of dnnc accepts, in one place.

A graph's inputs and outputs carry logical dims and strides in elements
(``dnn.strides`` in MLIR, ``strides`` in a package's manifest). The same rule
holds wherever one is read: building a ``dnnc.Graph``, reading dnn MLIR
(``dnnc compile``, ``Graph.from_mlir``), and loading a ``.dnnpkg``:

* one stride per dim, each at least 0;
* an input may repeat elements: a stride of 0 broadcasts it along that dim
  (a bias read as ``[1, C, 1, 1]`` or as ``[N, C, H, W]`` with zeros);
* an output may not: two of its elements at one address would race, or one
  would silently overwrite the other. Its dims of more than one element,
  ordered by stride, must each step past everything the ones before it
  cover (stride >= the previous dim's stride x its size); gaps between rows
  (a padded pitch) are allowed. This is the check cuDNN and PyTorch make of
  a non-overlapping layout; it also refuses the rare interleaved layouts
  that would not overlap.

``problem`` returns what is wrong as text (None when nothing is), so that
each caller raises its own typed error with the tensor's name. This module
imports nothing of dnnc and no MLIR: the runtime stands beside the compiler.
"""


def problem(dims, strides, output):
    """What breaks the rule above in a tensor of ``dims`` and ``strides``
    (``output``: the graph writes it), as text; None when nothing does."""
    dims, strides = list(dims), list(strides)
    if len(strides) != len(dims):
        return f"expected {len(dims)} strides (one per dim), got {len(strides)}"
    for d, s in enumerate(strides):
        if int(s) < 0:
            return f"dim {d} stride: expected >= 0, got {s}"
    if not output or any(n == 0 for n in dims):
        return None
    moving = sorted((int(s), int(n), d) for d, (n, s) in enumerate(zip(dims, strides)) if n > 1)
    reach, last = 1, None
    for stride, size, d in moving:
        if stride < reach:
            if stride == 0:
                return (f"dim {d} (size {size}) stride: expected > 0, got 0 (an output cannot "
                        "broadcast: its elements would share an address)")
            return (f"dim {d} (size {size}) stride: expected >= {reach}, the elements dim "
                    f"{last} spans, got {stride}: dims {last} and {d} overlap, two elements "
                    f"would share an address (strides {strides} for dims {dims})")
        reach, last = stride * size, d
    return None
