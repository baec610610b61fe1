"""tpu_helpers._compat against the pinned TensorFlow, tf-keras, transformers and fake-gcs-server wrapper: each test
fails when an upgrade moves or changes the private name the course relies on."""
import os

from tpu_helpers import _compat


def test_dataset_variant_is_what_dataset_to_graph_takes(tf):
    ds = tf.data.Dataset.range(4).map(lambda x: x * 2)
    serialized = tf.raw_ops.DatasetToGraphV2(input_dataset=_compat.dataset_variant(ds), external_state_policy=1)
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(serialized.numpy())
    assert any(node.op.startswith("MapDataset") for node in graph.node)


def test_create_optimizer_slots_makes_the_moments_of_notebook_04s_optimizer(tf):
    from transformers import create_optimizer

    legacy, _ = create_optimizer(init_lr=1e-3, num_train_steps=10, num_warmup_steps=1, weight_decay_rate=1e-3)
    assert hasattr(legacy, "_create_all_weights")  # AdamWeightDecay (notebook 04's) is a legacy optimizer
    weight = tf.Variable(tf.ones([3]))
    _compat.create_optimizer_slots(legacy, [weight])
    assert legacy.get_slot(weight, "m").shape == (3,) and int(legacy.iterations) == 0


def test_hiding_torch_xla_and_accelerate_from_transformers(tf):
    import transformers.utils.import_utils as import_utils

    _compat.hide_torch_xla_and_accelerate_from_transformers()
    assert not import_utils.is_torch_xla_available() and not import_utils.is_accelerate_available()


def test_fake_gcs_server_binary_is_an_executable():
    path = _compat.fake_gcs_server_binary()
    assert os.path.isfile(path) and os.access(path, os.X_OK), path
