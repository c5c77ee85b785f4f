"""The Python module of the ``dnn`` dialect, as the MLIR bindings look for one.

Whenever the bindings make a Python object of an op (``value.owner``,
``op.opview``, a walk), they import the module of its dialect, trying each
dialect search prefix (``mlir.dialects``, then those dnnc adds) until one
imports, and remember only a success. With no module for ``dnn`` every dnn
op object cost a failed import, a scan of ``sys.path``: some 0.1 ms, 46 000
times in dnn-fuse on ResNet-50's backward graph (5 of its 13 s). dnnc
registers the prefix ``dnnc.dialect.bindings`` (dnnc/dialect/irdl.py), so
the first lookup finds this module and the others hit the bindings' cache.

The dnn ops are defined with IRDL, not ODS: there are no op classes to
register here, and the bindings give dnn ops their generic ``OpView``.
"""
