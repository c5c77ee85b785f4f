"""dnnc for PyTorch users: ``torch.compile(model, backend="dnnc")``.

    import dnnc.torch
    model = torch.compile(model, backend="dnnc")
    print(dnnc.torch.explain(model, x))    # which ATen ops dnnc runs, as which kernels

``import dnnc`` does not import torch; this package does. Importing it
registers the "dnnc" backend with Dynamo (an installed dnnc also registers
it through the ``torch_dynamo_backends`` entry point, without an import).
"""

from dnnc.torch.backend import dnnc_backend, register
from dnnc.torch.explain import Explanation, explain

register()

__all__ = ["dnnc_backend", "explain", "Explanation"]
