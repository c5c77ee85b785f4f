"""Write docs/ops.md from the op definitions, so the reference can't drift.

    python tools/gen_op_docs.py            # rewrite docs/ops.md
    python tools/gen_op_docs.py --check    # exit 1 if docs/ops.md is stale
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, "docs", "ops.md")

FAMILIES = [
    ("conv", "Convolution"), ("matmul", "Matrix multiplication"), ("attention", "Attention"),
    ("norm", "Normalization"), ("softmax", "Softmax"), ("reduction", "Reduction"),
    ("pooling", "Pooling"), ("pointwise", "Pointwise"), ("tensor", "Tensor ops"),
]


def _attr(a):
    default = "" if a.required else f" = {a.default!r}"
    choices = f" (one of {', '.join(map(str, a.choices))})" if a.choices else ""
    doc = f": {a.doc}" if a.doc else ""
    return f"`{a.name}`: {a.kind}{default}{choices}{doc}"


def _items(items):
    out = []
    for i in items:
        mark = " (variadic)" if getattr(i, "variadic", False) else (
            " (optional)" if i.optional else "")
        out.append(f"`{i.name}`{mark}")
    return ", ".join(out) or "none"


def render():
    sys.path.insert(0, ROOT)
    from dnnc.dialect import all_ops

    modules = {}
    lines = ["# The dnn dialect: op reference", "",
             "Generated from the op definitions in `dnnc/dialect/` by "
             "`tools/gen_op_docs.py`; do not edit by hand.", "",
             "Ops are written in MLIR's generic form, e.g. "
             "`%y = \"dnn.relu\"(%x) : (tensor<4x7xf32>) -> tensor<4x7xf32>`. "
             "Every result's shape is checked against the rules below; element types "
             "are free (any float type) unless stated; a free result may also be an "
             "integer type (i32, si8, ui8), converted as `dnn.cast` converts.", ""]
    ops = all_ops()
    for family, title in FAMILIES:
        members = [d for d in ops if d.family == family]
        if not members:
            continue
        lines += [f"## {title}", ""]
        for d in members:
            mod = sys.modules[d.infer.__module__]
            if mod.__name__ not in modules and mod.__doc__:
                modules[mod.__name__] = True
                lines += [mod.__doc__.strip(), ""]
            lines += [f"### `dnn.{d.name}`", "", d.doc or "", "",
                      f"- operands: {_items(d.operands)}",
                      f"- results: {_items(d.results)}"]
            if d.attrs:
                lines.append("- attributes:")
                lines += [f"  - {_attr(a)}" for a in d.attrs]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true")
    args = p.parse_args()
    text = render()
    if args.check:
        current = open(TARGET).read() if os.path.exists(TARGET) else ""
        if current != text:
            print("docs/ops.md is stale: run python tools/gen_op_docs.py", file=sys.stderr)
            return 1
        return 0
    os.makedirs(os.path.dirname(TARGET), exist_ok=True)
    with open(TARGET, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
