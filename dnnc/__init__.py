"""dnnc: an MLIR-based compiler for deep-learning primitives.

    import dnnc
    g = dnnc.Graph(io_data_type=dnnc.data_type.FLOAT)
    ...
"""

from dnnc import _bootstrap

_bootstrap.load_before_mlir()

from dnnc.dialect.types import data_type  # noqa: E402
from dnnc.errors import (  # noqa: E402
    DnncError, GraphError, LoweringError, PipelineError, ToolError, UnsupportedError,
    VerificationError,
)
from dnnc.graph import Graph, Tensor  # noqa: E402
from dnnc.version import __version__  # noqa: E402

__all__ = [
    "Graph", "Tensor", "data_type", "DnncError", "GraphError", "LoweringError",
    "PipelineError", "ToolError", "UnsupportedError", "VerificationError", "__version__",
]
