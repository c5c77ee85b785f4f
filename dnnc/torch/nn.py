"""Modules that drop into a PyTorch model: subclasses of ``torch.nn``'s,
with the same constructor arguments, parameters and ``state_dict`` keys,
whose forward runs on dnnc (dnnc.torch.functional, with its fallbacks).

    model.conv1 = dnnc.torch.nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
    model.fc = dnnc.torch.nn.Linear(2048, 1000)
    layer = dnnc.torch.nn.LayerNorm(768)
    norm = dnnc.torch.nn.RMSNorm(4096, eps=1e-6)
    bn = dnnc.torch.nn.BatchNorm2d(64)          # also GroupNorm

``from_torch(module)`` makes one from an existing torch module (sharing its
parameters), so a model's layers can be swapped in place.
"""

import torch

from dnnc.torch import functional as _f


class Conv2d(torch.nn.Conv2d):
    """``torch.nn.Conv2d`` on dnnc; a ``padding_mode`` other than "zeros" pads with torch first."""

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            input = torch.nn.functional.pad(input, self._reversed_padding_repeated_twice,
                                            mode=self.padding_mode)
            return _f.conv2d(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return _f.conv2d(input, weight, bias, self.stride, self.padding, self.dilation,
                         self.groups)


class Linear(torch.nn.Linear):
    """``torch.nn.Linear`` on dnnc."""

    def forward(self, input):
        return _f.linear(input, self.weight, self.bias)


class LayerNorm(torch.nn.LayerNorm):
    """``torch.nn.LayerNorm`` on dnnc."""

    def forward(self, input):
        return _f.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(torch.nn.RMSNorm):
    """``torch.nn.RMSNorm`` on dnnc (``eps=None``: the input dtype's epsilon)."""

    def forward(self, input):
        return _f.rms_norm(input, self.normalized_shape, self.weight, self.eps)


class BatchNorm2d(torch.nn.BatchNorm2d):
    """``torch.nn.BatchNorm2d`` on dnnc: batch statistics in training (running
    ones updated, ``num_batches_tracked`` counted, ``momentum=None`` as the
    cumulative average), running statistics in eval when tracked."""

    def forward(self, input):
        self._check_input_dim(input)
        tracking = self.track_running_stats and self.running_mean is not None
        factor = self.momentum
        if self.training and tracking:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative: weight 1/n for the n-th batch
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch = self.training or not tracking
        keep = tracking and (not self.training or self.track_running_stats)
        return _f.batch_norm(input, self.running_mean if keep else None,
                             self.running_var if keep else None, self.weight, self.bias,
                             use_batch, factor if factor is not None else 0.0, self.eps)


class GroupNorm(torch.nn.GroupNorm):
    """``torch.nn.GroupNorm`` on dnnc."""

    def forward(self, input):
        return _f.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


_SWAPS = {torch.nn.Conv2d: Conv2d, torch.nn.Linear: Linear, torch.nn.LayerNorm: LayerNorm,
          torch.nn.RMSNorm: RMSNorm, torch.nn.BatchNorm2d: BatchNorm2d,
          torch.nn.GroupNorm: GroupNorm}


def from_torch(module):
    """A dnnc module holding ``module``'s parameters, buffers and settings (the
    same tensors, not copies), or ``module`` itself when it has no dnnc twin
    (only exact torch.nn classes are swapped, never subclasses)."""
    cls = _SWAPS.get(type(module))
    if cls is None:
        return module
    new = cls.__new__(cls)
    new.__dict__ = dict(module.__dict__)
    return new


def swap_modules(model):
    """Replace, in place, every torch.nn Conv2d, Linear, LayerNorm, RMSNorm,
    BatchNorm2d and GroupNorm inside ``model`` by its dnnc twin
    (``from_torch``); returns ``model``."""
    for name, child in list(model.named_children()):
        swapped = from_torch(child)
        if swapped is not child:
            setattr(model, name, swapped)
        else:
            swap_modules(child)
    return model
