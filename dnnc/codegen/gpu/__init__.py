"""The GPU back end's kernel builders, grouped by what they build.

The passes of the ``gpu`` and ``nvvm`` stages (dnnc/pipelines.py) call into
these packages; dnnc/targets/cuda.py runs the whole pipeline and makes the
artifact.

Families, one package each:

* ``tensorcore``: tc-sm90 and tc-sm80, a GEMM on tensor cores with its
  prologues and epilogue fused (matmul today; convolution and attention
  plug into the same engine);
* ``reduce``: simt-reduce's row programs (rows, split rows, merged
  reductions, rows folded into columns) and column programs;
* ``window``: simt-window, pooling forward and backward;
* ``elementwise``: simt-pointwise's vectorized loops and simt-transpose's
  transposing copies;
* ``math``: f32 math as arith code and native intrinsics (no libdevice),
  and the hardware's approximations for results rounded to bf16 / f16.

Shared by them, beside the packages:

* ``irutil``: walking and reading IR, the constants and waits builders share;
* ``loops``: blocks x threads distribution of parallel loops (simt-generic);
* ``outline``: new kernel functions for work found on the host;
* ``host_plan``: the launch plan read from the host code (buffers, workspace,
  kernels with grid, block and arguments), checked against the PTX;
* ``ptx``: reading the PTX back (entries, parameters, external calls);
* ``ptxas`` / ``sass``: running ptxas and cuobjdump (assembly check,
  registers, spills, SASS instruction counts).
"""
