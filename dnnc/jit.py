"""The JIT: ``Graph.compile(target="cuda")``.

    exe = jit(graph)                     # the current GPU's arch, through the cache
    exe = jit(graph, mode="autotune")    # tune what the database lacks, then compile

Detect the GPU's arch, compile through the JIT cache
(``compiler.compile_or_load``: a hit imports no MLIR and is read and checked
once, by the runtime's reader), return the runtime's Executable. With
``mode="autotune"`` the graph's kernels are first tuned (dnnc/tune/tuner.py)
into the tuning database, which every cuda compile reads. The JIT sits above
both the driver and the tuner, which compiles through the driver.
"""

from dnnc import compiler, env


def jit(graph, arch=None, cache=True, mode="heuristic", top=None, progress=None, **options):
    """``Graph.compile(target="cuda")``: compile ``graph`` (a
    ``compiler.GraphLike``) for ``arch`` (None: the current GPU's) through
    the cache and return the runtime's Executable (``dnnc_runtime.load``),
    callable on torch / CuPy / NumPy arrays. With ``stop_after`` the module
    is returned instead.

    Kernel configs come from the tuning database where it has the kernel's
    problem, else from the heuristics. ``mode="autotune"`` first tunes the
    kernels the database lacks for this GPU on it (dnnc/tune/tuner.py: the
    ``top`` best ranked configs of each, default 4, each compiled and timed;
    ``progress`` gets a ``tuner.Progress`` per step) and writes the database,
    then compiles with the winners."""
    compiler.check_mode(mode, top=top, progress=progress)
    if arch is None:
        arch, name = compiler.detect_gpu()
        options.setdefault("gpu", name)
    options.setdefault("dump_ir", env.dump_ir_dir())
    if options.get("stop_after"):
        return compiler.compile_cuda(graph, arch, cache=False, **options)
    if mode == "autotune":
        # Imported here: the tuner imports MLIR, which a cache hit does not.
        from dnnc.tune import tuner

        report = tuner.autotune(graph, arch, gpu=options.get("gpu"),
                                db=options.get("tuning_db"), config=options.get("config"),
                                top=top or tuner.DEFAULT_TOP, progress=progress)
        if report.gpu and not options.get("gpu"):
            options["gpu"] = report.gpu  # its entries, not another GPU's, for the compile
    exe, _ = compiler.compile_or_load(graph, arch, cache, **options)
    return exe
