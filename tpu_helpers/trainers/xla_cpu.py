"""Lightning's XLA accelerator on PyTorch/XLA's CPU device, so a machine without a TPU runs Lightning's TPU path."""
from __future__ import annotations

import logging
import sys
from typing import Union

import torch
from lightning.fabric.accelerators.xla import _parse_tpu_devices_str
from lightning.fabric.utilities.device_parser import _check_data_type
from lightning.pytorch.accelerators import XLAAccelerator

from tpu_helpers.core.logs import DropMessages


class XLACPUAccelerator(XLAAccelerator):
    """Lightning's ``XLAAccelerator`` on PJRT's CPU device (``PJRT_DEVICE=CPU``): one device, ``xla:0``."""

    def __init__(self) -> None:
        if not self.is_available():
            raise RuntimeError("XLACPUAccelerator is for PyTorch/XLA's CPU device (PJRT_DEVICE=CPU, set before "
                               "torch_xla is imported). On a TPU write Trainer(accelerator='tpu').")
        super().__init__()

    @staticmethod
    def is_available() -> bool:  # Lightning's asks for TPU chips on the PCI bus
        import torch_xla.runtime as xr

        return xr.device_type() == "CPU"

    @staticmethod
    def auto_device_count() -> int:  # Lightning's asks the GCE metadata server (tpu-env)
        return 1  # the course runs one XLA:CPU device: several XLA:CPU processes abort on small machines

    @staticmethod
    def parse_devices(devices: Union[int, str, list[int]]) -> Union[int, list[int]]:
        """Lightning's TPU rule (1, the count, or [index]) against this machine's one device."""
        _check_data_type(devices)
        if isinstance(devices, str):
            devices = _parse_tpu_devices_str(devices)
        if devices == 1 or (isinstance(devices, (list, tuple)) and list(devices) == [0]):
            return devices
        raise ValueError(f"devices={devices!r}: on PyTorch/XLA's CPU device the course runs one device "
                         "(devices=1, [0] or 'auto'). devices=8 needs a TPU with 8 devices (a v5e-8, a v3-8).")

    @staticmethod
    def get_parallel_devices(devices: Union[int, list[int]]) -> list[torch.device]:  # after parse_devices
        return [torch.device("xla", 0)]


def quiet_lightning() -> logging.Handler:
    """Lightning's loggers through one stdout handler (not also the root logger's), without its tips; returns it."""
    handler = logging.StreamHandler(sys.stdout)
    handler.addFilter(DropMessages("💡 Tip:"))  # Lightning 2.6's litlogger/litmodels advertisements
    for name in ("lightning.pytorch", "lightning.fabric"):
        log = logging.getLogger(name)
        log.handlers = [h for h in log.handlers if not isinstance(h, logging.StreamHandler)] + [handler]
        log.propagate = False
    return handler
