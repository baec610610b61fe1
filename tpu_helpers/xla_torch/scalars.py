"""Every Python float a step hands to PyTorch/XLA as a graph input of its own: one graph for every step."""
from __future__ import annotations


def scalars_as_graph_inputs(device) -> bool:
    """On an XLA `device`, turn off special scalars and the scalar cache in this process; False off XLA."""
    if getattr(device, "type", str(device).split(":")[0]) != "xla":
        return False
    import torch_xla

    torch_xla._XLAC._set_xla_handle_special_scalars(False)
    torch_xla._XLAC._set_xla_enable_device_data_cache(False)
    return True
