"""What ``print(graph)`` shows of a ``dnnc.Graph``, and the inputs no op uses.

    Graph 'main': io bf16, intermediate f32, compute default
      inputs
        x  [8, 64, 56, 56]  stride [200704, 1, 3584, 64]  bf16
        w  [64, 64, 3, 3]   stride [576, 1, 192, 64]      bf16
        u  [4]              stride [1]                    bf16
      ops
        conv_fprop0  conv_fprop(x=x, w=w; pre_padding=[1, 1], post_padding=[1, 1], ...) -> ...
        relu1        relu(x=conv_fprop0.y) -> relu1.y [8, 64, 56, 56] bf16
      outputs
        relu1.y
      not read by any op: u

Types are as the graph resolves them now (a virtual tensor's is the
intermediate type). Attributes are shown unless they equal the op's static
default (a convolution's stride and padding, inferred per graph, are always
shown). No MLIR is needed.
"""

import warnings


class UnusedInputWarning(UserWarning):
    """A graph input that no op reads: it is still an argument of the compiled
    graph (bound on every call), so it is most likely a mistake."""


def unused_inputs(graph):
    """The graph's inputs that no op reads (in declaration order); a ragged
    tensor's offsets count as read by it, and an input that is also an
    output is used."""
    read = set()
    for node in graph.nodes:
        for value in node.operands.values():
            for t in value if isinstance(value, list) else [value]:
                if t is not None:
                    read.add(id(t))
                    offsets = t.get_ragged_offset()
                    if offsets is not None:
                        read.add(id(offsets))
    read.update(id(t) for t in graph.outputs)
    return [t for t in graph.inputs if id(t) not in read]


def warn_unused(graph, stacklevel=3):
    """Warn (UnusedInputWarning) about each input no op reads, naming it."""
    for t in unused_inputs(graph):
        warnings.warn(f"graph '{graph.name}': input '{t.name}' {list(t.dim)} is not read by "
                      "any op (it stays an argument of the compiled graph)",
                      UnusedInputWarning, stacklevel=stacklevel)


def _dtype(graph, t):
    try:
        return str(graph._resolve_dtype(t))
    except Exception as e:  # a graph still being built may not resolve yet
        return f"? ({type(e).__name__})"


def _value(v):
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def _attrs(node):
    shown = []
    for key, value in node.attrs.items():
        try:
            default = node.opdef.attr(key).default
        except Exception:
            default = None
        if default is not None and value == default:
            continue
        shown.append(f"{key}={_value(value)}")
    return shown


def _operands(node):
    parts = []
    for key, value in node.operands.items():
        if value is None:
            continue
        if isinstance(value, list):
            parts.append(f"{key}=[{', '.join(t.name for t in value)}]")
        else:
            parts.append(f"{key}={value.name}")
    return parts


def _table(rows, indent):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def describe(graph):
    """The text ``print(graph)`` shows: types, inputs, ops, outputs, and the
    inputs no op reads."""
    compute = graph.compute_data_type or "default"
    io = graph.io_data_type or "not set"
    lines = [f"Graph '{graph.name}': io {io}, intermediate {graph.intermediate_data_type}, "
             f"compute {compute}"]
    lines.append("  inputs" if graph.inputs else "  inputs: none")
    if graph.inputs:
        lines += _table([[t.name, str(list(t.dim)), f"stride {t.get_stride()}",
                          _dtype(graph, t)] for t in graph.inputs], "    ")
    lines.append("  ops" if graph.nodes else "  ops: none")
    width = max((len(node.name) for node in graph.nodes), default=0)
    for node in graph.nodes:
        args = ", ".join(_operands(node))
        attrs = _attrs(node)
        call = f"{node.opdef.name}({args}{'; ' + ', '.join(attrs) if attrs else ''})"
        results = ", ".join(f"{t.name} {list(t.dim)} {_dtype(graph, t)}"
                            for t in node.results.values())
        lines.append(f"    {node.name.ljust(width)}  {call} -> {results}")
    lines.append("  outputs" if graph.outputs else "  outputs: none (set_output(True) marks one)")
    lines += [f"    {t.name}" for t in graph.outputs]
    unused = unused_inputs(graph)
    if unused:
        lines.append(f"  not read by any op: {', '.join(t.name for t in unused)}")
    return "\n".join(lines)
