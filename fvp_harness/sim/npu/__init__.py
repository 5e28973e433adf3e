"""The Ethos-U NPU's cost models, over a compiled network (``sim/networks``): the analytic cycle
model (``cycles.py``), the real compiler's estimate (``vela.py``, with ``tool.py`` its part of ``sim
model``), and the Linux driver's host CPU cost (``driver_cost.py``)."""
