"""The GPU fuzzer behind ``tools/fuzz``: random graphs per op family and
random fusion chains, compiled here into packages, run on the GPU by the
runtime alone against PyTorch.

A configuration is a small program stored as JSON (``program.py``): its
input tensors (dims, strides, type, how their values are drawn) and a list
of ``Graph`` method calls. The same JSON is read twice: by
``graph_builder.py`` (here, with dnnc) to add the calls to a graph, and by
``torch_ops.py`` (on the GPU machine, without dnnc) to compute the
reference. Nothing else ties the two sides together.

    program.py        the configuration format, names, the repro command
    shapes.py         shape edges and strides the families draw from
    families.py       one drawing function per op family
    graph_builder.py  configuration -> Graph calls (needs dnnc)
    packing.py        ``fuzz build``: configurations packed into packages, index.json
    values.py         input values, extremal ones included (NumPy / torch)
    torch_ops.py      configuration -> PyTorch reference outputs
    compare.py        per-dtype tolerances, NaN / inf rules, failure lines
    runner.py         ``fuzz run``: poison, launch, compare, the table
"""
