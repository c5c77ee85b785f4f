"""The dnn dialect as IRDL, generated from the OpDefs and loaded into a context.

IRDL checks structure (operand and result counts and that they are tensors);
the semantic rules (shapes, element types, attributes) are the OpDefs' infer
functions, run by ``dnnc.dialect.verify``.
"""

from dnnc.dialect import opdef


def _group(kind, items, lines):
    # One constraint value per operand: IRDL unifies uses of the same value, so
    # sharing one would force every operand to have the same type.
    parts = []
    for item in items:
        var = f"%{kind[0]}_{item.name}"
        lines.append(f'    {var} = irdl.base "!builtin.tensor"')
        variadicity = ""
        if getattr(item, "variadic", False):
            variadicity = "variadic "
        elif item.optional:
            variadicity = "optional "
        parts.append(f"{item.name}: {variadicity}{var}")
    lines.append(f"    irdl.{kind}({', '.join(parts)})")


def irdl_text():
    """IRDL source of the whole dnn dialect."""
    lines = ["irdl.dialect @dnn {"]
    for d in opdef.all_ops():
        lines.append(f"  irdl.operation @{d.name} {{")
        _group("operands", d.operands, lines)
        _group("results", d.results, lines)
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


_TEXT = None


# The package holding the dnn dialect's module for the MLIR bindings.
BINDINGS = "dnnc.dialect.bindings"


def load(context):
    """Register the dnn dialect in ``context`` (an ``mlir.ir.Context``)."""
    global _TEXT
    from mlir import ir
    from mlir.dialects import irdl

    if _TEXT is None:
        _TEXT = irdl_text()
        # Once per process: where the bindings find the dnn dialect's
        # (empty) Python module, which they import for every dnn op object
        # they make until one is found (dnnc/dialect/bindings/dnn.py).
        from mlir._mlir_libs import _mlir

        if BINDINGS not in _mlir.globals.dialect_search_modules:
            _mlir.globals.append_dialect_search_prefix(BINDINGS)
    with context:
        module = ir.Module.parse(_TEXT)
        irdl.load_dialects(module)
