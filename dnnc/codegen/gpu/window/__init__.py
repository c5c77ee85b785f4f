"""simt-window: pooling windows, forward and backward (dnn-pool-windows)."""
