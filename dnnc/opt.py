"""``dnnc-opt``: run dnnc and upstream passes on MLIR files, like ``mlir-opt``.

    dnnc-opt graph.mlir --pass-pipeline='builtin.module(dnn-verify,dnn-fuse,canonicalize)'
    dnnc-opt --split-input-file invalid.mlir      # verify each chunk, report each error
    dnnc-opt --dump-pipeline                      # print the pipelines of dnnc/pipelines.py
    dnnc-opt --pipeline cpu --dump-ir out/ graph.mlir

Every input is parsed, and its dnn ops verified, before the passes run, and
the dnn ops left after them are verified again (as ``dnn-verify`` does), so a
pass that leaves shape-inconsistent IR fails its lit test. Errors print as
``file:line:col: error: message`` and the exit code is 1.
"""

import argparse
import sys

from dnnc.errors import DnncError

SPLIT_MARKER = "// -----"


def _parser():
    p = argparse.ArgumentParser(prog="dnnc-opt", description=__doc__.split("\n\n")[0])
    p.add_argument("input", nargs="?", default="-", help="MLIR file ('-' for stdin)")
    p.add_argument("--pass-pipeline", default="",
                   help="passes to run, e.g. 'builtin.module(dnn-verify,canonicalize)'")
    p.add_argument("--pipeline", default=None,
                   help="run a named pipeline of dnnc/pipelines.py (e.g. 'front', 'cpu')")
    p.add_argument("--split-input-file", action="store_true",
                   help=f"treat '{SPLIT_MARKER}' lines as separators between inputs")
    p.add_argument("--dump-ir", metavar="DIR", default=None,
                   help="write the IR after every pass into DIR")
    p.add_argument("--dump-pipeline", action="store_true",
                   help="print the pipelines dnnc declares and exit")
    p.add_argument("--list-passes", action="store_true", help="print dnnc's passes and exit")
    p.add_argument("-o", dest="output", default="-", help="output file ('-' for stdout)")
    p.add_argument("--version", action="version", version=_version())
    return p


def _version():
    from dnnc.artifact import dnnc_version, mlir_version

    return f"dnnc-opt {dnnc_version()} (MLIR {mlir_version()})"


def _chunks(text, split):
    if not split:
        return [(0, text)]
    chunks, offset, current = [], 0, []
    start = 0
    for line in text.splitlines(keepends=True):
        if line.strip() == SPLIT_MARKER:
            chunks.append((start, "".join(current)))
            current, start = [], offset + 1
        else:
            current.append(line)
        offset += 1
    chunks.append((start, "".join(current)))
    return chunks


def _where(location, filename, line_offset):
    """``file:line:col`` for an mlir Location, lines counted in the whole file."""
    try:
        if location is not None and location.is_a_file():
            return f"{filename}:{location.start_line + line_offset}:{location.start_col}"
    except AttributeError:
        pass
    return filename


def process(text, pipeline, *, filename="<stdin>", line_offset=0, dump_dir=None):
    """Parse, verify and transform one input; return the output text."""
    from dnnc import dialect, passes
    from dnnc.parsing import parse

    ctx = dialect.context()
    module = parse(text, context=ctx)
    if pipeline:
        from dnnc.passes.dnn_verify import verify_module

        passes.run_pipeline(module, pipeline, dump_dir=dump_dir)
        verify_module(module)
    return str(module)


def _report(err, filename, line_offset, stream):
    from dnnc.errors import ToolError, VerificationError

    if isinstance(err, ToolError) and err.stderr:
        # MLIR's own diagnostics already carry "file":line:col; rebase the lines.
        for line in err.stderr.splitlines():
            stream.write(_rebase(line, filename, line_offset) + "\n")
        return
    location = err.location if isinstance(err, VerificationError) else None
    stream.write(f"{_where(location, filename, line_offset)}: error: {err}\n")


def _rebase(line, filename, line_offset):
    import re

    m = re.match(r'loc\("[^"]*":(\d+):(\d+)\): error: (.*)', line)
    if m:
        return f"{filename}:{int(m.group(1)) + line_offset}:{m.group(2)}: error: {m.group(3)}"
    return line


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.dump_pipeline:
        from dnnc import pipelines

        print(pipelines.describe(args.pipeline))
        return 0
    if args.list_passes:
        from dnnc import passes

        for name, cls in sorted(passes.registry().items()):
            doc = (sys.modules[cls.__module__].__doc__ or name).strip().splitlines()[0]
            print(doc)
        return 0
    pipeline = args.pass_pipeline
    try:
        if args.pipeline:
            from dnnc import pipelines

            pipeline = ",".join(p for stage in pipelines.get(args.pipeline) for p in stage.passes)
        if pipeline:
            from dnnc import passes

            passes.parse_pipeline(pipeline)
    except DnncError as err:
        sys.stderr.write(f"dnnc-opt: error: {err}\n")
        return 1
    filename = args.input
    try:
        text = sys.stdin.read() if filename == "-" else _read(filename)
    except OSError as err:
        sys.stderr.write(f"dnnc-opt: error: cannot read '{filename}': {err.strerror}\n")
        return 1
    outputs, failed = [], False
    for line_offset, chunk in _chunks(text, args.split_input_file):
        try:
            outputs.append(process(chunk, pipeline, filename=filename, line_offset=line_offset,
                                   dump_dir=args.dump_ir))
        except DnncError as err:
            failed = True
            _report(err, filename, line_offset, sys.stderr)
    out = (f"\n{SPLIT_MARKER}\n").join(o.rstrip("\n") for o in outputs) + "\n"
    if args.output == "-":
        sys.stdout.write(out)
    else:
        try:
            with open(args.output, "w") as f:
                f.write(out)
        except OSError as err:
            sys.stderr.write(f"dnnc-opt: error: cannot write '{args.output}': {err.strerror}\n")
            return 1
    return 1 if failed else 0


def _read(filename):
    with open(filename) as f:
        return f.read()


if __name__ == "__main__":
    sys.exit(main())
