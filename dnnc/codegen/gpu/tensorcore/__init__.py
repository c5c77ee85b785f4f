"""The tensor-core engine: a GEMM on tensor cores with its prologues and
epilogue fused; convolution and attention are meant to reuse its parts.

* ``gemm``: what a tensor-core kernel computes, read from a kernel function
  (the GEMM's operands, their prologues, the pointwise epilogue);
* ``interfaces``: the seams, as protocols with what each part provides
  (operand loader, tile scheduler, mainloop roles, epilogue);
* ``sm90/``: tc-sm90, Hopper (TMA, wgmma, warp specialization, persistent
  blocks, split-K), one file per part;
* ``sm80/``: tc-sm80, Ampere and later (cp.async, ldmatrix, mma.sync);
* ``pair_epilogue``: the epilogue evaluated where the accumulators lie,
  shared by both;
* ``emit``: the small IR emitters they share.
"""
