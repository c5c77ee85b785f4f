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
                                            # compare with the NumPy reference

Errors print as ``dnnc: error: ...``; the exit code is 1 for a bad graph or
option, 2 for a usage error.
"""

import argparse
import os
import sys

from dnnc.errors import DnncError


def _parser():
    from dnnc.pipelines import ARCHS

    p = argparse.ArgumentParser(prog="dnnc", description="dnnc: compile dnn graphs")
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
    return p


def _basename(path):
    return os.path.splitext(os.path.basename(path))[0]


def cmd_compile(args, out):
    from dnnc import compiler, graph_mlir, plan

    if args.arch:
        return _compile_cuda(args, out)
    if args.config:
        from dnnc.pipelines import ARCHS

        raise UsageError(f"--config configures GPU kernels: it needs --arch ({' or '.join(ARCHS)})")
    if args.output and args.output.endswith(".dnnpkg"):
        from dnnc.pipelines import ARCHS

        raise UsageError(f"writing a .dnnpkg needs --arch ({' or '.join(ARCHS)})")
    stage = args.stage or "fused"
    module = graph_mlir.parse(open(args.input).read())
    opts = compiler.Options(target="cpu", dump_ir=args.dump_ir, stop_after=stage)
    module = compiler.compile_module(module, opts, basename=_basename(args.input))
    text = str(module)
    if stage == "fused":
        out.write(plan.describe(module) + "\n\n")
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
        out.write(f"wrote {args.output}\n")
    else:
        out.write(text)
    if args.dump_ir:
        out.write(f"stages written to {args.dump_ir}/\n")
    return 0


class UsageError(Exception):
    """A combination of options that makes no sense (exit code 2)."""


def _compile_cuda(args, out):
    from dnnc import compiler, graph_mlir

    module = graph_mlir.parse(open(args.input).read())
    opts = compiler.Options(target="cuda", arch=args.arch, dump_ir=args.dump_ir,
                            stop_after=args.stage, config=args.config)
    result = compiler.compile_module(module, opts, basename=_basename(args.input))
    if args.stage:
        if args.stage == "ptx":
            from dnnc.codegen.gpu import ptx

            text = ptx.extract(result)
        else:
            text = str(result)
        if args.output:
            with open(args.output, "w") as f:
                f.write(text)
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

    from dnnc import compiler, graph_mlir, interpreter

    text = open(args.input).read()
    module = graph_mlir.parse(text)
    fn = graph_mlir.entry_function(module)
    rng = np.random.default_rng(args.seed)
    inputs = []
    from dnnc.dialect import builders

    for arg in fn.regions[0].blocks[0].arguments:
        info = builders.info_of(arg.type)
        if info.dtype.is_float:
            inputs.append(rng.standard_normal(info.shape).astype(info.dtype.numpy))
        else:
            inputs.append(rng.random(info.shape) < 0.5)
    expected = interpreter.run_module(module, inputs)
    exe = compiler.compile_module(graph_mlir.parse(text),
                                  compiler.Options(target="cpu", dump_ir=args.dump_ir),
                                  basename=_basename(args.input))
    got = exe.run(*inputs)
    out.write(f"{'output':<24}{'shape':<20}{'dtype':<10}{'max |err|':>12}{'max |ref|':>12}\n")
    for name, g, e in zip(exe.output_names, got, expected):
        g64 = np.asarray(g).astype(np.float64)
        err = float(np.max(np.abs(g64 - e))) if g64.size else 0.0
        ref = float(np.max(np.abs(e))) if np.size(e) else 0.0
        shape = "x".join(map(str, np.shape(g))) or "scalar"
        out.write(f"{name:<24}{shape:<20}{str(np.asarray(g).dtype):<10}{err:>12.3g}{ref:>12.3g}\n")
    return 0


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        if args.command == "compile":
            return cmd_compile(args, sys.stdout)
        if args.command == "run":
            return cmd_run(args, sys.stdout)
        if args.command == "inspect":
            return cmd_inspect(args, sys.stdout)
    except UsageError as err:
        sys.stderr.write(f"dnnc: error: {err}\n")
        return 2
    except DnncError as err:
        sys.stderr.write(f"dnnc: error: {err}\n")
        return 1
    except OSError as err:
        sys.stderr.write(f"dnnc: error: {err}\n")
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
