"""Elementwise work and data movement.

* ``vectorize``: simt-pointwise, an elementwise generic or a copy as a loop
  over 16-byte vectors (dnn-vectorize-pointwise), and the body cloning and
  broadcast maps other builders share;
* ``transpose``: transposing copies through shared memory (simt-transpose,
  dnn-tile-transposes, and the copy tc-sm90 runs ahead of a GEMM whose
  operand it cannot read in place).
"""
