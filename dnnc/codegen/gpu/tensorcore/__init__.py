"""The tensor-core engine: a GEMM on tensor cores with its prologues and
epilogue fused.

* ``gemm``: what a tensor-core kernel computes, read from a kernel function
  (the GEMM's operands, their prologues, the pointwise epilogue);
* ``pair_epilogue``: the epilogue evaluated where the accumulators lie;
* ``sm90``: tc-sm90, Hopper (TMA, wgmma, warp specialization);
* ``sm80``: tc-sm80, Ampere and later (cp.async, mma.sync).
"""
