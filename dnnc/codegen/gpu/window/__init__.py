"""simt-window: pooling windows, forward and backward (dnn-pool-windows).

Each module imports only those listed before it:

* ``tile``: a config's tile as outputs per spatial dim (no MLIR: the
  heuristics read it too);
* ``program``: what a window program is, ``match`` into a ``Window``, and
  the layout pieces both emitters share;
* ``forward``: ``Emitter``, a thread's tile of output pixels of a forward
  pool;
* ``gradients``: ``GradientEmitter``, a thread's tile of dx, gathered;
* ``windows``: ``build``, which picks the emitter and lays the launch
  around it;
* ``depthwise``, ``depthwise_emit``: the simt-depthwise strategy
  (dnn-depthwise-conv), a depthwise convolution as a window program whose
  taps are weighted per channel: its matcher, and its launch and thread;
* ``depthwise_dgrad``: its data gradient's thread (stride phases along W);
* ``grouped_emit``: groups of a few channels, forward and data gradient
  (threads that read their groups' span of channels);
* ``depthwise_wgrad``: the filter gradient, depthwise or grouped, in two
  launches (partial sums, their sum in order).
"""
