"""dnn-parallel-dims-first: reorder each ``linalg.generic``'s loops so that
its parallel loops come first and its reduction loops last.

``convert-linalg-to-parallel-loops`` turns the leading parallel loops into
one ``scf.parallel`` and everything from the first reduction loop on into
``scf.for`` (a parallel loop after a reduction becomes a nested
``scf.parallel`` that dnn-distribute-loops can only run sequentially). A
reduction over a middle axis (``[parallel, reduction, parallel]``) would then
give the GPU only the outer dims' worth of threads, or none: with parallel
dims first, every output element is a thread. Reordering the loops of a
``linalg.generic`` keeps its meaning (the relative order of the reduction
loops is kept); indexing maps and ``linalg.index`` ops are renumbered.

Before::

    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                     affine_map<(d0, d1, d2) -> (d0, 0, d2)>],
                    iterator_types = ["parallel", "reduction", "parallel"]}

After::

    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>,
                                     affine_map<(d0, d1, d2) -> (d0, 0, d1)>],
                    iterator_types = ["parallel", "parallel", "reduction"]}

Lit test: test/lit/passes/dnn_parallel_dims_first.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.passes import DnncPass, register


def interchange(op):
    """Reorder ``op``'s loops, parallel first; False when already in order."""
    iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
    n = len(iterators)
    order = [i for i in range(n) if irutil.is_parallel(iterators[i])] + \
            [i for i in range(n) if not irutil.is_parallel(iterators[i])]
    if order == list(range(n)):
        return False
    new_position = [0] * n  # old loop order[k] becomes loop k
    for k, old in enumerate(order):
        new_position[old] = k
    # Substitute d_old -> d_new in every map: compose with the map whose
    # result i is the new position of old loop i.
    rename = ir.AffineMap.get_permutation(new_position)
    maps = []
    for attr in ir.ArrayAttr(op.attributes["indexing_maps"]):
        amap = ir.AffineMapAttr(attr).value
        exprs = [e.compose(rename) for e in amap.results]
        maps.append(ir.AffineMapAttr.get(ir.AffineMap.get(n, amap.n_symbols, exprs)))
    op.attributes["indexing_maps"] = ir.ArrayAttr.get(maps)
    op.attributes["iterator_types"] = ir.ArrayAttr.get([iterators[i] for i in order])
    i64 = ir.IntegerType.get_signless(64)
    for index in irutil.ops(op, "linalg.index"):
        old = ir.IntegerAttr(index.attributes["dim"]).value
        index.attributes["dim"] = ir.IntegerAttr.get(i64, new_position[old])
    return True


@register
@dataclass
class DnnParallelDimsFirst(DnncPass):
    NAME = "dnn-parallel-dims-first"

    def run(self, module):
        with module.context:
            for op in irutil.ops(module, "linalg.generic"):
                interchange(op)
