"""dnn-vectorize-pointwise: lower the elementwise loops of every kernel whose
``dnn.config`` names the ``simt-pointwise`` strategy to 16-byte vector loads
and stores (dnnc/codegen/gpu/elementwise/vectorize.py).

Runs in the ``gpu`` stage on bufferized kernel functions, before
convert-linalg-to-parallel-loops. The config's ``vector`` is the number of
elements per load and store, ``unroll`` the vectors each thread handles, and
``block[0]`` the threads per block (the vector order depends on it). Every
top-level ``linalg.generic`` or ``linalg.copy`` that qualifies becomes an
``scf.parallel`` over groups of vectors, which dnn-distribute-loops spreads
over blocks and threads like any other; one that does not qualify (a map
that moves the innermost dim, a reduction, an innermost dim that is not a
multiple of ``vector``, a slice that starts inside a vector) is left to the
one-thread-per-element lowering. Copies into parts of one buffer that share
no element, from inputs that are not that buffer (a concat's inputs into
their slabs), become one ``scf.parallel``, whose groups take the first
copy's body, then the second's: one launch for the whole concat. The
function records how many did as ``dnn.vectorized = [done, total]``. The
heuristics choose simt-pointwise for copies from shapes and the anchor's
attributes, not from maps or views: a kernel none of whose ops qualifies is
handed to simt-generic, its reason saying why.

Before (config ``{block = [128, 1, 1], strategy = "simt-pointwise", vector = 8}``)::

    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<64x256xbf16>) outs(%y : memref<64x256xbf16>) { ... }

After::

    scf.parallel (%g) = (%c0) to (%c2048) step (%c1) {
      %j = arith.remui %g, %c32
      %i = arith.divui %g, %c32
      %e = arith.muli %j, %c8
      %v = vector.load %x[%i, %e] {alignment = 16} : memref<64x256xbf16>, vector<8xbf16>
      ... the body, once per lane ...
      vector.store %r, %y[%i, %e] {alignment = 16} : memref<64x256xbf16>, vector<8xbf16>
    }

Lit test: test/lit/passes/dnn_vectorize_pointwise.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise import vectorize
from dnnc.heuristics.config import fall_back, kernels_of
from dnnc.passes import DnncPass, register

STRATEGY = "simt-pointwise"
DONE_ATTR = "dnn.vectorized"


@register
@dataclass
class DnnVectorizePointwise(DnncPass):
    NAME = "dnn-vectorize-pointwise"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn, config in kernels_of(module, STRATEGY):
                done, total, why = vectorize.vectorize_ops(
                    fn, config.vector, config.unroll, config.block[0])
                fn.attributes[DONE_ATTR] = irutil.i64_array([done, total])
                if total and not done:
                    fall_back(fn, f"{STRATEGY} does not apply ({why}): simt-generic, one "
                                  f"thread per element", config.block)
