"""``tensor``: a cudnn-frontend tensor attribute set, recorded for dnnc.

A frontend tensor is a description (name, dims, strides, data type, uid,
virtual, pass by value), as cudnn-frontend's ``Tensor_attributes`` is. Its
setters return the tensor, so they chain
(``Y.set_output(True).set_data_type(cudnn.data_type.HALF)``). An op's output
has no dims until the graph is lowered to dnnc (``pygraph.validate``, or the
first ``get_dim``), except the dims the caller sets: a reduction's, a
gradient convolution's and a reshape's output dims are what the caller
sets, as in cuDNN.
"""

import json

from dnnc.frontend import enums
from dnnc.frontend.enums import data_type, library_type, tensor_reordering


class tensor:  # noqa: N801 (cudnn-frontend's name)
    """One tensor of a ``pygraph``: an input (``producer`` None) or an op's output."""

    def __init__(self, graph=None, dim=(), stride=(), data_type=data_type.NOT_SET,
                 is_virtual=False, is_pass_by_value=False, name="", uid=None, producer=None,
                 value=None):
        self._graph = graph
        self._name = str(name or "")
        self._dim = [int(d) for d in dim] if dim else []
        self._stride = [int(s) for s in stride] if stride else []
        self._data_type = library_type(data_type)
        self._is_virtual = bool(is_virtual)
        self._is_pass_by_value = bool(is_pass_by_value)
        self._uid = uid
        self._producer = producer     # (frontend node, output index) or None for an input
        self._value = value           # a pass-by-value scalar fixed when the graph is built
        self._user_dim = bool(dim)    # dims the caller gave (an op output's drive its op)
        self._user_stride = bool(stride)
        self._reordering = tensor_reordering.NONE
        self._alignment = 0
        self._inferred_type = enums.data_type.NOT_SET  # what dnnc resolved, when not set
        self._ragged_offset = None    # a packed (THD) tensor's offsets (sdpa's tensors)

    # -- cudnn-frontend's accessors --------------------------------------------

    def get_name(self):
        return self._name

    def set_name(self, name):
        self._name = str(name)
        return self

    def get_data_type(self):
        if self._data_type is not data_type.NOT_SET:
            return self._data_type
        if self._inferred_type is enums.data_type.NOT_SET and self._graph is not None:
            self._graph._try_infer()   # an input takes the graph's io type, an output dnnc's rule
        return self._inferred_type

    def set_data_type(self, data_type=data_type.NOT_SET):
        """The element type; a cuDNN data_type, a torch or NumPy dtype."""
        self._data_type = library_type(data_type)
        return self

    def get_dim(self):
        if not self._dim and self._graph is not None and self._producer is not None:
            self._graph._try_infer()
        return list(self._dim)

    def set_dim(self, dim):
        self._dim = [int(d) for d in dim]
        self._user_dim = True
        return self

    def get_stride(self):
        if not self._stride and self._graph is not None and self._producer is not None:
            self._graph._try_infer()
        return list(self._stride)

    def set_stride(self, stride):
        self._stride = [int(s) for s in stride]
        self._user_stride = True
        return self

    def get_is_virtual(self):
        return self._is_virtual

    def set_is_virtual(self, is_virtual):
        self._is_virtual = bool(is_virtual)
        return self

    def set_output(self, is_output):
        """Mark this tensor a graph output (not virtual), or virtual again."""
        return self.set_is_virtual(not is_output)

    def get_is_pass_by_value(self):
        return self._is_pass_by_value

    def set_is_pass_by_value(self, is_pass_by_value):
        self._is_pass_by_value = bool(is_pass_by_value)
        return self

    def get_has_compile_time_constant(self):
        return self._value is not None

    def get_uid(self):
        if self._uid is None and self._graph is not None:
            self._graph._assign_uid(self)
        return self._uid

    def set_uid(self, uid):
        self._uid = int(uid)
        if self._graph is not None:
            self._graph._uid_changed()
        return self

    def get_reordering_type(self):
        return self._reordering

    def set_reordering_type(self, reordering_type):
        self._reordering = reordering_type
        return self

    def get_alignment(self):
        return self._alignment

    def set_alignment(self, alignment):
        self._alignment = int(alignment)
        return self

    def get_vector_count(self):
        return 1

    def get_vector_dimension(self):
        return -1

    def set_vector_count_and_dimension(self, count, dimension):
        if int(count) != 1:
            from dnnc.frontend.errors import cudnnGraphNotSupportedError

            raise cudnnGraphNotSupportedError(f"tensor '{self._name}': vectorized layouts: "
                                              f"expected a vector count of 1, got {count}")
        return self

    def set_ragged_offset(self, ragged_offset):
        """Make this tensor ragged (packed, "THD"): ``ragged_offset`` is an
        int32 [B + 1, 1, 1, 1] tensor of this graph, the element offset where
        each batch entry's sequence starts (dnnc.Graph's
        ``Tensor.set_ragged_offset``, checked when the graph is lowered).
        None makes it padded again."""
        if ragged_offset is not None and getattr(ragged_offset, "_graph", None) is not \
                self._graph:
            from dnnc.frontend.errors import InvalidGraphError

            raise InvalidGraphError(f"tensor '{self._name}': ragged offset: expected a tensor "
                                    f"of this graph, got {type(ragged_offset).__name__}")
        self._ragged_offset = ragged_offset
        return self

    def get_ragged_offset(self):
        return self._ragged_offset

    # -- dnnc's view -------------------------------------------------------------

    @property
    def is_input(self):
        return self._producer is None

    def _describe(self):
        return {"name": self._name, "uid": self._uid, "dim": self._dim, "stride": self._stride,
                "data_type": self._data_type.name, "is_virtual": self._is_virtual,
                "is_pass_by_value": self._is_pass_by_value}

    def __repr__(self):
        return json.dumps(self._describe())

    # Tensors are dict keys of variant packs: identity, as in cudnn-frontend.
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other
