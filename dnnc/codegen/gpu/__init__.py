"""The GPU back end's code generation (target ``cuda``, strategy simt-generic).

The passes of the ``gpu`` and ``nvvm`` stages (dnnc/pipelines.py) call into
these modules; ``driver`` runs the whole pipeline and makes the artifact.

* ``driver``: dnn module -> ``dnnc.artifact.Package`` (manifest, PTX, source);
* ``host_plan``: the launch plan read from the host code (buffers, workspace,
  kernels with grid, block and arguments), checked against the PTX;
* ``loops``: blocks x threads distribution of parallel loops;
* ``outline``: new kernel functions for work found on the host;
* ``math_approx`` / ``math_scalar``: math functions as arith code and native
  intrinsics (no libdevice); ``math_fast``: the hardware's approximations, for
  results rounded to bf16 / f16;
* ``ptx``: reading the PTX back (entries, parameters, external calls);
* ``ptxas``: finding and running ptxas (assembly check, registers, spills);
* ``irutil``: walking and reading IR.
"""
