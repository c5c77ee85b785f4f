"""``dnnc.frontend``: cudnn-frontend's Python API (v1.x) on dnnc.

    import dnnc.frontend as cudnn

Code written for NVIDIA's cudnn-frontend runs with that one import changed:
the same graph object (``pygraph``), tensors, op names and keywords, enums,
lifecycle and errors, compiled by dnnc and run by its runtime (on the GPU)
or its CPU back end. docs/python-api.md maps each call to dnnc's and says
what is not supported.

One purpose per module: enums (``enums``), errors (``errors``), tensors
(``tensor``), the graph and its lifecycle (``pygraph``), the ops
(``ops_pointwise``, ``ops_core``, ``ops_norm``, ``ops_attention``), the
lowering to ``dnnc.Graph`` (``lowering``), plans and execute (``execute``),
handles and versions (``handle``), the helpers ``graph`` / ``jit`` /
``graph_cache`` (``decorators``) and the ``Graph`` wrapper (``wrapper``).
"""

from dnnc.frontend.decorators import graph, graph_cache, jit
from dnnc.frontend.enums import (
    attention_implementation, behavior_note, build_plan_policy, convolution_mode, data_type,
    diagonal_alignment, heur_mode, knob, knob_type, moe_grouped_matmul_mode, norm_forward_phase,
    numerical_note, reduction_mode, reshape_mode, scalar_type, tensor_reordering,
)
from dnnc.frontend.errors import (
    InvalidGraphError, InvalidVariantPackError, UnsupportedDataTypeError,
    cudnnGraphNotSupportedError,
)
from dnnc.frontend.handle import (
    backend_version, backend_version_string, create_handle, destroy_handle,
    get_last_error_string, get_stream, set_stream,
)
from dnnc.frontend.pygraph import pygraph
from dnnc.frontend.tensor import tensor
from dnnc.frontend.wrapper import Graph
from dnnc.version import __version__

__all__ = [
    "attention_implementation", "backend_version", "backend_version_string", "behavior_note",
    "build_plan_policy", "convolution_mode", "create_handle", "cudnnGraphNotSupportedError",
    "data_type", "destroy_handle", "Graph", "diagonal_alignment", "get_last_error_string", "get_stream",
    "graph", "graph_cache", "heur_mode", "InvalidGraphError", "InvalidVariantPackError", "jit",
    "knob", "knob_type", "moe_grouped_matmul_mode", "norm_forward_phase", "numerical_note",
    "pygraph", "reduction_mode", "reshape_mode", "scalar_type", "set_stream", "tensor",
    "tensor_reordering", "UnsupportedDataTypeError", "__version__",
]
