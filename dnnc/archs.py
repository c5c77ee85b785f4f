"""The GPU architectures dnnc compiles for: one ``cuda-<arch>`` pipeline each
(dnnc/pipelines.py), and the values ``dnn-configure{arch=...}`` and the
heuristics accept. Here, at the bottom of the layers, so that a pass reads
the list without importing the pipelines that run it."""

ARCHS = ("sm_80", "sm_90a")
