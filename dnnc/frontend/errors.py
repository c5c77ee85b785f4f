"""The errors ``dnnc.frontend`` raises, under cudnn-frontend's class names.

Code written for cudnn-frontend catches ``cudnn.cudnnGraphNotSupportedError``
to skip a graph the library refuses, and ``ValueError`` (what pybind11 makes
of ``std::invalid_argument``) for a graph or variant pack built wrongly. The
classes here keep those names and bases and also derive from dnnc's own
hierarchy (``dnnc.errors``), so a caller of dnnc catches them as
``UnsupportedError`` / ``GraphError`` too. The message is always dnnc's
explanation: the op, the tensor, the dimension, expected against got.
"""

from dnnc.errors import GraphError, UnsupportedError


class cudnnGraphNotSupportedError(UnsupportedError):  # noqa: N801 (cudnn-frontend's name)
    """dnnc cannot run this graph: an op, an option or a data type it does not
    implement, or a problem no strategy supports."""


class UnsupportedDataTypeError(cudnnGraphNotSupportedError, GraphError):
    """A tensor uses a cuDNN data type dnnc has no storage for (DOUBLE, INT8,
    INT64, ...). A GraphError, and a cudnnGraphNotSupportedError, which is
    what cudnn-frontend code catches to skip a graph."""


class InvalidGraphError(GraphError, ValueError):
    """The graph is built wrongly: a missing attribute, a shape that cannot
    be deduced, two tensors with one uid."""


class InvalidVariantPackError(GraphError, ValueError):
    """``execute``'s variant pack does not fit the graph: a tensor missing, a
    uid the graph does not have, a buffer of the wrong shape."""
