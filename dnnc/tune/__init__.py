"""Autotuning: time the heuristics' top configs on the GPU, remember the fastest.

    exe = graph.compile(target="cuda", mode="autotune")   # tune, then compile
    exe = graph.compile(target="cuda")                    # later: the database's configs

    $ dnnc tune graph.mlir --top 4                        # the same from the shell

* ``db`` — the tuning database: one JSON file of entries keyed by arch, GPU
  and the kernel's problem signature; atomic writes; ``digest`` for the JIT
  cache key. Imports no MLIR.
* ``signature`` — a kernel's canonical problem (a heuristics.Problem plus its
  strides): what an entry is keyed on.
* ``entry`` — an entry's config as override fields, both ways, and the
  ``dnn.config_reason`` a kernel configured from it gets.
* ``measure`` — random inputs, timing and running a candidate with the runtime.
* ``tuner`` — the Tuner: list kernels, compile and time each candidate,
  record the winner.

dnn-configure (dnnc/passes/dnn_configure.py) reads the database: a kernel
whose problem has an entry for the arch gets the entry's config (a user
override still wins), and its reason starts with ``tuned:``.

This package's ``__init__`` imports nothing: the cache key imports ``db``
alone, without MLIR.
"""
