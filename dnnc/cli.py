"""``dnnc``: the compiler driver.

    dnnc compile graph.mlir                 # print the launch plan and the fused IR
    dnnc compile graph.mlir --stage linalg  # stop after another stage
    dnnc compile graph.mlir --dump-ir out/  # write every stage as out/<graph>.<stage>.mlir
    dnnc compile graph.mlir -o graph.dnnpkg --arch sm_90a
                                            # compile for a GPU (none needed), write the
                                            # artifact, print its launch plan
    dnnc compile graph.mlir --arch sm_90a --config 'graph_k0_softmax=block:128'
                                            # override the heuristics' kernel config
    dnnc inspect graph.dnnpkg               # the artifact's plan; registers, spills and
                                            # shared memory per kernel when ptxas is found
    dnnc run graph.mlir                     # compile for the CPU, run on random data,
                                            # compare with the NumPy reference: PASS, or
                                            # FAIL with the outputs that differ (exit 1)
    dnnc tune graph.mlir --top 4            # on the GPU: time each kernel's top configs,
                                            # keep the fastest in the tuning database
                                            # (graph.py: its build() or its one Graph)
    dnnc tune --export tuned.json           # copy the database; --import merges one in
    dnnc fuzz build --family all --out .fuzz  # the fuzzer (tools/fuzz of a source
    dnnc fuzz run .fuzz                     # checkout): build here, run on the GPU;
    dnnc fuzz run --cpu .fuzz               # or on the CPU back end (docs/reliability.md)

Errors print as ``dnnc: error: ...``; the exit code is 1 for a bad graph or
option, 2 for a usage error.
"""

import argparse
import os
import re
import sys

from dnnc.errors import DnncError


def _parser():
    from dnnc.pipelines import ARCHS

    p = argparse.ArgumentParser(prog="dnnc", description="dnnc: compile dnn graphs")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="compile a dnn graph and show what came out")
    c.add_argument("input", help="dnn-dialect MLIR file")
    c.add_argument("--stage", default=None,
                   help="stage whose IR to print (dnn, decomposed, fused, linalg, llvm; "
                        "with --arch: configured, gpu, nvvm, ptx); default: fused, or the "
                        "whole GPU pipeline with --arch")
    c.add_argument("--dump-ir", metavar="DIR", help="write every stage's IR into DIR")
    c.add_argument("--arch", choices=ARCHS,
                   help="compile for this NVIDIA GPU architecture (target cuda); no GPU needed")
    c.add_argument("--config", metavar="KERNEL=block:N",
                   help="with --arch: override the heuristics' config of a kernel (as the "
                        "fused stage names it; '*' for every kernel): "
                        "KERNEL=key:value[,key:value][;KERNEL=...], keys strategy, block "
                        "(threads per block, N or NxMxK), and for simt-pointwise vector "
                        "(elements per load) and unroll (vectors per thread)")
    c.add_argument("--tuning-db", metavar="FILE",
                   help="with --arch: take kernel configs from this tuning database ('off': "
                        "none; default $DNNC_TUNING_DB, else tuning.json in the cache "
                        "directory; see dnnc tune)")
    c.add_argument("--no-cubin", dest="cubin", action="store_false", default=None,
                   help="with --arch: no cubin beside the PTX in the package (default: one "
                        "for the arch whenever ptxas is found, unless DNNC_CUBIN=0)")
    c.add_argument("-o", dest="output",
                   help="write the printed IR here instead of stdout; with --arch (and no "
                        "--stage), the .dnnpkg artifact")
    i = sub.add_parser("inspect", help="show a .dnnpkg's launch plan and per-kernel resources")
    i.add_argument("input", help=".dnnpkg file")
    r = sub.add_parser("run", help="compile for the CPU, run on random inputs, check against "
                                   "the reference")
    r.add_argument("input", help="dnn-dialect MLIR file")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--dump-ir", metavar="DIR")
    t = sub.add_parser("tune", help="time each kernel's best ranked configs on the GPU and "
                                    "record the fastest in the tuning database")
    t.add_argument("input", nargs="?",
                   help="dnn-dialect MLIR file, or a Python file whose build() returns a "
                        "dnnc.Graph (or that makes exactly one); none: only --import/--export")
    t.add_argument("--arch", choices=ARCHS, help="default: the GPU's")
    t.add_argument("--top", type=_positive, default=4, metavar="N",
                   help="candidates per kernel: the heuristics' N best ranked (default 4)")
    t.add_argument("--db", metavar="FILE",
                   help="the tuning database (default: $DNNC_TUNING_DB, else tuning.json in "
                        "the cache directory)")
    t.add_argument("--retune", action="store_true",
                   help="tune kernels the database already has for this GPU again")
    t.add_argument("--import", dest="import_", metavar="FILE",
                   help="merge this database's entries in first (the newer entry of a "
                        "problem wins)")
    t.add_argument("--export", metavar="FILE", help="write the database here when done")
    # Everything after "fuzz" is tools/fuzz's (its own --help included).
    f = sub.add_parser("fuzz", add_help=False,
                       help="the fuzzer: random graphs per op family built here and run on "
                            "the GPU (or --cpu) against PyTorch; tools/fuzz of a source "
                            "checkout, whose arguments it takes (dnnc fuzz --help)")
    f.add_argument("fuzz_args", nargs=argparse.REMAINDER)
    return p


def _version():
    """dnnc's version, and the MLIR it was built against where the bindings load."""
    from dnnc.artifact import dnnc_version, mlir_version

    return f"dnnc {dnnc_version()} (MLIR {mlir_version()})"


def _positive(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return n


def _basename(path):
    return os.path.splitext(os.path.basename(path))[0]


def cmd_compile(args, out):
    from dnnc import compiler, plan
    from dnnc.parsing import parse_graph

    if args.arch:
        return _compile_cuda(args, out)
    for flag, value in (("--config", args.config), ("--tuning-db", args.tuning_db),
                        ("--no-cubin", args.cubin is False)):
        if value:
            from dnnc.pipelines import ARCHS

            raise UsageError(f"{flag} configures GPU kernels: it needs --arch "
                             f"({' or '.join(ARCHS)})")
    if args.output and args.output.endswith(".dnnpkg"):
        from dnnc.pipelines import ARCHS

        raise UsageError(f"writing a .dnnpkg needs --arch ({' or '.join(ARCHS)})")
    stage = args.stage or "fused"
    module = parse_graph(_read(args.input))
    opts = compiler.Options(target="cpu", dump_ir=args.dump_ir, stop_after=stage)
    module = compiler.compile_module(module, opts, basename=_basename(args.input))
    text = str(module)
    if stage == "fused":
        out.write(plan.describe(module) + "\n\n")
    if args.output:
        _write(args.output, text)
        out.write(f"wrote {args.output}\n")
    else:
        out.write(text)
    if args.dump_ir:
        out.write(f"stages written to {args.dump_ir}/\n")
    return 0


class UsageError(Exception):
    """A combination of options that makes no sense (exit code 2)."""


def _compile_cuda(args, out):
    from dnnc import compiler
    from dnnc.parsing import parse_graph

    module = parse_graph(_read(args.input))
    opts = compiler.Options(target="cuda", arch=args.arch, dump_ir=args.dump_ir,
                            stop_after=args.stage, config=args.config,
                            tuning_db=args.tuning_db, cubin=args.cubin)
    result = compiler.compile_module(module, opts, basename=_basename(args.input))
    if args.stage:
        if args.stage == "ptx":
            from dnnc.codegen.gpu import ptx

            text = ptx.extract(result)
        else:
            text = str(result)
        if args.output:
            _write(args.output, text)
            out.write(f"wrote {args.output}\n")
        else:
            out.write(text)
        return 0
    out.write(result.describe() + "\n")
    if args.output:
        result.save(args.output)
        out.write(f"wrote {args.output}\n")
    if args.dump_ir:
        out.write(f"stages written to {args.dump_ir}/\n")
    return 0


def cmd_inspect(args, out):
    from dnnc import artifact
    from dnnc.codegen.gpu import ptxas

    package = artifact.read(args.input)
    resources = None
    tool = ptxas.find()
    if tool is not None:
        resources = ptxas.assemble(package.ptx, package.arch, ptxas=tool)
    out.write(package.describe(resources) + "\n")
    if tool is None:
        out.write("(ptxas not found: set DNNC_PTXAS or install nvidia-cuda-nvcc to see "
                  "registers, spills and shared memory)\n")
    else:
        out.write(f"(resources from {tool})\n")
    return 0


def cmd_run(args, out):
    import numpy as np

    from dnnc import compiler, interpreter
    from dnnc.dialect.walk import entry_function
    from dnnc.parsing import parse_graph

    text = _read(args.input)
    module = parse_graph(text)
    fn = entry_function(module)
    rng = np.random.default_rng(args.seed)
    inputs = []
    from dnnc.dialect import builders

    for arg in fn.regions[0].blocks[0].arguments:
        info = builders.info_of(arg.type)
        if info.dtype.is_float:
            inputs.append(rng.standard_normal(info.shape).astype(info.dtype.numpy))
        elif info.dtype.is_integer and info.dtype.itemsize == 1:
            limits = np.iinfo(info.dtype.numpy)  # int8 / uint8: their whole range
            inputs.append(rng.integers(limits.min, limits.max + 1, info.shape)
                          .astype(info.dtype.numpy))
        elif info.dtype.is_integer:
            # int32 (lengths, offsets, page tables): 0 or 1, in range for the
            # ops that read them, typed int32 as the CPU back end takes them.
            inputs.append(rng.integers(0, 2, info.shape).astype(info.dtype.numpy))
        else:
            inputs.append(rng.random(info.shape) < 0.5)
    expected = interpreter.run_module(module, inputs)
    exe = compiler.compile_module(parse_graph(text),
                                  compiler.Options(target="cpu", dump_ir=args.dump_ir),
                                  basename=_basename(args.input))
    got = exe.run(*inputs)
    out.write(f"{'output':<24}{'shape':<20}{'dtype':<10}{'max |err|':>12}{'max |ref|':>12}"
              f"{'allowed':>12}  verdict\n")
    failed = []
    for name, spec, g, e in zip(exe.output_names, exe.signature.outputs, got, expected):
        g64 = np.asarray(g).astype(np.float64)
        e64 = np.asarray(e, dtype=np.float64)
        err = float(np.max(np.abs(g64 - e64))) if g64.size else 0.0
        ref = float(np.max(np.abs(e64))) if e64.size else 0.0
        allowed = RUN_RTOL.get(spec.dtype.mlir, 0.0) * max(1.0, ref)
        ok = bool(np.array_equal(np.isnan(g64), np.isnan(e64))) and \
            bool(np.all(np.abs(np.nan_to_num(g64 - e64, nan=0.0)) <= allowed))
        if not ok:
            failed.append(name)
        shape = "x".join(map(str, np.shape(g))) or "scalar"
        out.write(f"{name:<24}{shape:<20}{str(np.asarray(g).dtype):<10}{err:>12.3g}{ref:>12.3g}"
                  f"{allowed:>12.3g}  {'ok' if ok else 'MISMATCH'}\n")
    n = len(exe.output_names)
    if failed:
        out.write(f"FAIL: {len(failed)} of {n} outputs differ from the reference by more than "
                  f"allowed: {', '.join(failed)}\n")
        return 1
    out.write(f"PASS: {n} output{'s' if n != 1 else ''} within tolerance of the reference\n")
    return 0


# ``dnnc run``'s tolerance: |got - ref| <= RUN_RTOL[dtype] * max(1, max |ref|),
# the output's storage precision with room for f32 accumulation (booleans and
# integers exact). NaN must be where the reference has NaN.
RUN_RTOL = {"f32": 1e-3, "f16": 4e-3, "bf16": 3.2e-2, "f8E4M3FN": 0.25, "f8E5M2": 0.5}


def load_graph(path):
    """The graph in file ``path``: MLIR text (.mlir), or the dnnc.Graph a
    Python file's ``build()`` returns (else the one Graph it makes at top
    level); its ``main`` is not run."""
    if not path.endswith(".py"):
        return _read(path)
    import runpy

    from dnnc.graph import Graph

    scope = runpy.run_path(path, run_name="dnnc_graph")
    if callable(scope.get("build")):
        graph = scope["build"]()
        if isinstance(graph, Graph):
            return graph
        raise UsageError(f"{path}: build() returned {type(graph).__name__}, expected a "
                         f"dnnc.Graph")
    graphs = [v for k, v in scope.items() if isinstance(v, Graph) and not k.startswith("_")]
    if len(graphs) != 1:
        raise UsageError(f"{path}: expected a build() function or exactly one dnnc.Graph at "
                         f"top level, got {len(graphs)} graphs")
    return graphs[0]


class ProgressBar:
    """The tuner's progress as one line on ``stream``, redrawn in place on a
    terminal, else one line per kernel."""

    WIDTH = 24

    def __init__(self, stream):
        self.stream = stream
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.last = None

    def __call__(self, p):
        done = (p.kernel - 1) * p.candidates + p.candidate - (p.phase == "compile")
        fraction = done / max(1, p.kernels * p.candidates)
        bar = "#" * round(fraction * self.WIDTH)
        text = (f"[{bar:<{self.WIDTH}}] kernel {p.kernel}/{p.kernels} {p.name}  "
                f"candidate {p.candidate}/{p.candidates}  {p.elapsed:6.1f} s")
        if self.tty:
            self.stream.write("\r" + text[:160].ljust(160))
        elif p.phase != "compile" and (p.kernel, p.candidate) != self.last:
            what = f"{p.ms:.4g} ms" if p.ms is not None else f"skipped: {p.note}"
            self.stream.write(f"{text}  {p.config}: {what}\n")
            self.last = (p.kernel, p.candidate)
        self.stream.flush()

    def close(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _tune_report(report, out):
    for r in report.results:
        k = r.kernel
        out.write(f"{k.name}  {k.summary}\n")
        names = [str(c.config) + (f" (ran as {c.ran})" if c.ran else "") for c in r.candidates]
        width = max(map(len, names), default=0)
        for c, name in zip(r.candidates, names):
            mark = "*" if c is r.winner else " "
            what = f"{c.ms:9.4f} ms" if c.ms is not None else f"skipped: {c.skipped}"
            out.write(f"  {mark} {name:<{width}}  {what}\n")
        h = r.heuristic
        if r.winner is None:
            out.write("  no candidate ran: nothing recorded\n")
        elif h is not None and h.ms is not None and r.winner is not h:
            out.write(f"  tuned {r.winner.ms:.4g} ms vs {h.ms:.4g} ms heuristic "
                      f"({h.ms / r.winner.ms:.2f}x)\n")
        else:
            out.write("  the heuristics' choice is the fastest\n")
    for name, why in report.not_tuned.items():
        out.write(f"{name}  not tuned: {why}\n")


def cmd_tune(args, out, err):
    from dnnc.tune import db

    if not (args.input or args.import_ or args.export):
        raise UsageError("dnnc tune: expected a graph file, --import FILE or --export FILE")
    path = db.resolve(args.db)
    if path is None:
        raise UsageError(f"the tuning database is '{db.OFF}': pass --db FILE")
    if args.import_:
        database = db.load(path)
        added, replaced = database.merge(db.load(args.import_).entries)
        database.save()
        out.write(f"imported {args.import_}: {added} new, {replaced} replaced entries "
                  f"into {path}\n")
    if args.input:
        from dnnc import compiler
        from dnnc.tune import tuner

        graph = load_graph(args.input)
        arch, gpu = (args.arch, None) if args.arch else compiler.detect_gpu()
        bar = ProgressBar(err)
        try:
            report = tuner.autotune(graph, arch, gpu=gpu, db=path, top=args.top,
                                    retune=args.retune, progress=bar)
        finally:
            bar.close()
        _tune_report(report, out)
        tuned = sum(r.winner is not None for r in report.results)
        out.write(f"tuned {tuned} kernel{'s' if tuned != 1 else ''} on "
                  f"{report.gpu or arch} in {report.elapsed:.1f} s; database {path}\n")
    if args.export:
        database = db.load(path)
        db.export(args.export, database.entries)
        out.write(f"exported {len(database.entries)} entries to {args.export}\n")
    return 0


def fuzz_script():
    """tools/fuzz of the checkout this dnnc comes from; UsageError where
    there is none (an installed dnnc: the fuzzer is a developer tool)."""
    import dnnc

    root = os.path.dirname(os.path.dirname(os.path.abspath(dnnc.__file__)))
    script = os.path.join(root, "tools", "fuzz")
    if not os.path.isfile(script):
        raise UsageError(f"fuzz: expected the fuzzer at {script} (a source checkout of dnnc), "
                         "got no such file")
    return script


def cmd_fuzz(fuzz_args):
    """``dnnc fuzz ARGS``: tools/fuzz ARGS in a process of its own (its run
    side loads no MLIR), its output and exit code passed on."""
    import subprocess

    return subprocess.call([sys.executable, fuzz_script(), *fuzz_args])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["fuzz"]:
        # Forwarded whole, before argparse: its REMAINDER would not take a
        # first argument that starts with "-" (dnnc fuzz --help).
        try:
            return cmd_fuzz(argv[1:])
        except UsageError as err:
            sys.stderr.write(f"dnnc: error: {err}\n")
            return 2
    args = _parser().parse_args(argv)
    try:
        if args.command == "compile":
            return cmd_compile(args, sys.stdout)
        if args.command == "run":
            return cmd_run(args, sys.stdout)
        if args.command == "inspect":
            return cmd_inspect(args, sys.stdout)
        if args.command == "tune":
            return cmd_tune(args, sys.stdout, sys.stderr)
    except UsageError as err:
        sys.stderr.write(f"dnnc: error: {err}\n")
        return 2
    except DnncError as err:
        sys.stderr.write(f"dnnc: error: {_in_file(str(err), getattr(args, 'input', None))}\n")
        return 1
    except OSError as err:
        sys.stderr.write(f"dnnc: error: {_describe(err)}\n")
        return 1
    return 2


def _in_file(message, path):
    """``message`` with MLIR's locations in the text it parsed (``loc("-":3:8)``:
    dnnc parses the file's text, not the file) given as ``path:3:8``."""
    if not path:
        return message
    return re.sub(r'loc\("-":(\d+):(\d+)\)', lambda m: f"{path}:{m.group(1)}:{m.group(2)}",
                  message)


def _read(path):
    """The text of file ``path``; an OSError that says it could not read it."""
    try:
        with open(path) as f:
            return f.read()
    except OSError as err:
        raise OSError(err.errno, f"cannot read '{path}': {err.strerror}") from None


def _write(path, text):
    """Write ``text`` to file ``path``; an OSError that says it could not."""
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as err:
        raise OSError(err.errno, f"cannot write '{path}': {err.strerror}") from None


def _describe(err):
    """An OSError in one line that names its file, without Python's
    ``[Errno N]`` prefix."""
    if err.filename is not None:
        return f"'{err.filename}': {err.strerror}"
    return err.strerror or str(err)


if __name__ == "__main__":
    sys.exit(main())
