"""f32 math for GPU kernels, with no math library (dnn-expand-math).

* ``scalar``: constants, arith shorthands and the functions PTX has an
  instruction for;
* ``approx``: every math op within 1-2 ulp as plain arith code;
* ``fast``: the hardware's approximations, for results rounded to bf16 / f16.
"""
