"""dnnc.torch (in progress)."""
