"""Every Python float a step hands to PyTorch/XLA as a graph input, whatever its value: one graph for every step.

AdamW's decoupled weight decay multiplies every weight by ``1 - lr * weight_decay``, a Python float computed on the
host at every step (torch 2.9, ``torch.optim.adam``). Near the end of a linear decay (and in the first steps of a
warm-up from 0) ``lr * weight_decay`` drops below 2**-25 and the factor rounds to 1.0 in float32. torch_xla 2.9 then
changes the step's graph in two ways, measured on XLA:CPU (``tests/torch/banking77/test_schedule_graphs.py``):

* by default the scalars 0 and 1 become constants of the graph (``torch::lazy::IsSpecialScalar``): a new graph.
  ``XLA_NO_SPECIAL_SCALARS=1`` turns that off (read once per process, when ``import torch_xla`` runs
  ``_XLAC._init_xla_lazy_backend()``; ``_XLAC._set_xla_handle_special_scalars`` sets it at run time);
* then the factor is a graph input, but the lazy tensor core caches scalar inputs by value
  (``LazyGraphExecutor::DataCacheArena``, keyed on the float32 value): 1.0 becomes the same device buffer as the step's
  other 1.0 (an ``alpha=1``), and equal buffers are one parameter of the graph (``parameter_sequence`` is part of
  the graph's hash, ``xla_graph_executor.cpp``): again a new graph. torch_xla 2.9 has no environment variable for
  that cache; ``_XLAC._set_xla_enable_device_data_cache(False)`` turns it off in the process.

`scalars_as_graph_inputs` does both in the calling process. The price: every scalar of a step is its own upload to
the device (AdamW: about a dozen per weight tensor per step, where the cache sent each distinct value once).
"""
from __future__ import annotations

__all__ = ["scalars_as_graph_inputs"]


def scalars_as_graph_inputs(device) -> bool:
    """On an XLA `device`, make every scalar a graph input of its own in this process (no 0/1 constants, no
    value cache); returns whether it did (False off XLA: nothing to do, torch_xla not imported)."""
    if getattr(device, "type", str(device).split(":")[0]) != "xla":
        return False
    import torch_xla

    torch_xla._XLAC._set_xla_handle_special_scalars(False)
    torch_xla._XLAC._set_xla_enable_device_data_cache(False)
    return True
