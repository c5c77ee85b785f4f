"""Python modules the MLIR bindings import for dnnc's dialects (see dnn.py)."""
