"""`XLACPUAccelerator`: Lightning's TPU code path (XLAAccelerator, SingleDeviceXLAStrategy, XLAPrecision) on
PyTorch/XLA's CPU device, without the TPU's PCI bus or the GCE metadata server."""
import pytest

pytest.importorskip("torch_xla")
L = pytest.importorskip("lightning.pytorch")


def trainer(accelerator, **kw):
    return L.Trainer(accelerator=accelerator, logger=False, enable_checkpointing=False, enable_model_summary=False,
                     enable_progress_bar=False, **kw)


def test_lightning_refuses_accelerator_tpu_off_a_tpu(xla):
    """Why the helper exists: Lightning's own XLAAccelerator finds no TPU here."""
    from lightning.pytorch.utilities.exceptions import MisconfigurationException

    with pytest.raises(MisconfigurationException, match="can not run on your system"):
        trainer("tpu", devices=1)


@pytest.mark.parametrize("devices", [1, "1", [0], "auto"])
def test_the_trainer_takes_lightnings_tpu_strategy_and_precision_on_xla_cpu(xla, devices):
    from lightning.pytorch.accelerators import XLAAccelerator
    from lightning.pytorch.plugins.precision import XLAPrecision
    from lightning.pytorch.strategies import SingleDeviceXLAStrategy

    from tpu_helpers.trainers.xla_cpu import XLACPUAccelerator

    t = trainer(XLACPUAccelerator(), devices=devices)
    assert isinstance(t.accelerator, XLAAccelerator) and t.num_devices == 1
    assert isinstance(t.strategy, SingleDeviceXLAStrategy) and t.strategy.root_device.type == "xla"
    assert isinstance(t.precision_plugin, XLAPrecision)


def test_more_devices_than_the_cpu_device_is_a_clear_error(xla):
    from tpu_helpers.trainers.xla_cpu import XLACPUAccelerator

    with pytest.raises(ValueError, match="devices=8 needs a TPU"):
        trainer(XLACPUAccelerator(), devices=8)


def test_no_metadata_server_is_asked(xla, monkeypatch):
    """Lightning's device parsing asks torch_xla._internal.tpu for tpu-env; the helper answers from PJRT."""
    from torch_xla._internal import tpu

    from tpu_helpers.trainers.xla_cpu import XLACPUAccelerator

    def no_server(key):
        raise AssertionError(f"asked the metadata server for {key}")

    monkeypatch.setattr(tpu, "_get_metadata", no_server)
    assert XLACPUAccelerator.is_available() and XLACPUAccelerator.auto_device_count() == 1
    assert XLACPUAccelerator.parse_devices(1) == 1 and XLACPUAccelerator.parse_devices("0,") == [0]
    assert XLACPUAccelerator.get_parallel_devices([0])[0].type == "xla"


def test_fit_trains_on_the_xla_device_through_xla_precision(xla, data, bag_of_words):
    """A fit runs the TPU path: weights on xla:0, and XLAPrecision's xm.mark_step() once per optimizer step."""
    import torch
    import torch_xla.debug.metrics as met
    from torch.utils.data import DataLoader
    from transformers import DataCollatorWithPadding

    from tpu_helpers.trainers.xla_cpu import XLACPUAccelerator

    tok, train = data
    loader = DataLoader(train, batch_size=16, drop_last=True,
                        collate_fn=DataCollatorWithPadding(tok, padding="max_length", max_length=32))
    class Devices(L.Callback):
        seen = set()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.seen |= {pl_module.head.weight.device.type, batch["input_ids"].device.type}

    module = bag_of_words(len(tok), 77)
    before = module.head.weight.detach().clone()
    marks = met.counter_value("MarkStep") or 0
    devices = Devices()
    trainer(XLACPUAccelerator(), devices=1, max_steps=4, callbacks=[devices]).fit(module, loader)
    assert devices.seen == {"xla"}, "weights and batches on the XLA device during training"
    assert not torch.equal(module.head.weight.detach().cpu(), before)
    assert (met.counter_value("MarkStep") or 0) - marks >= 4


def test_lightning_speaks_once_on_stdout_without_its_tips(capsys):
    import logging

    from tpu_helpers.trainers.xla_cpu import quiet_lightning

    logging.basicConfig()  # a root handler, as in a Jupyter kernel
    quiet_lightning()
    quiet_lightning()  # again: still one handler
    info = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    info.info("GPU available: False, used: False")
    info.info("💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger]")
    logging.getLogger("lightning.fabric.utilities.distributed").info("Initializing distributed: GLOBAL_RANK: 0")
    out, err = capsys.readouterr()
    assert out.splitlines() == ["GPU available: False, used: False", "Initializing distributed: GLOBAL_RANK: 0"]
    assert err == ""
