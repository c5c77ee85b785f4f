"""The ``dnn`` dialect: op definitions, IRDL registration, MLIR builders and verifier.

``dnnc.dialect.context()`` is the only way dnnc makes an MLIR context: it has the
upstream dialects and ``dnn`` loaded.
"""

from dnnc import _bootstrap

_bootstrap.load_before_mlir()

# Importing the families registers their ops, in this order.
from dnnc.dialect import ops_pointwise, ops_tensor, ops_matmul, ops_conv  # noqa: E402,F401
from dnnc.dialect import ops_attention, ops_norm, ops_reduce  # noqa: E402,F401
from dnnc.dialect.opdef import OpDef, TensorInfo, all_ops, get  # noqa: E402
from dnnc.dialect.types import as_data_type, data_type  # noqa: E402

__all__ = ["OpDef", "TensorInfo", "all_ops", "get", "data_type", "as_data_type", "context"]


def context():
    """A new ``mlir.ir.Context`` with every upstream dialect and ``dnn`` loaded."""
    from mlir import ir

    from dnnc.dialect import irdl

    ctx = ir.Context()
    irdl.load(ctx)
    return ctx
