"""The pipeline-purity inspector on real tf.data pipelines, including ones built by datasets and transformers."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tpu_helpers.tpu_tf.purity import EXPLANATIONS, inspect_pipeline, unknown_dims  # noqa: E402

FEATURES = {"input_ids": tf.io.FixedLenFeature([4], tf.int64), "label": tf.io.FixedLenFeature([], tf.int64)}


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(0)
    return rng.integers(1, 50, size=(20, 4)).astype("int64"), np.arange(20) % 2


@pytest.fixture(scope="module")
def tfrecord(tmp_path_factory, arrays):
    ids, labels = arrays
    path = str(tmp_path_factory.mktemp("records") / "train-00000.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for row, label in zip(ids, labels):
            feats = {"input_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=row)),
                     "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)]))}
            w.write(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString())
    return path


def parsed(files):
    ds = tf.data.TFRecordDataset(files).batch(4, drop_remainder=True)
    return ds.map(lambda b: tf.io.parse_example(b, FEATURES))


def test_in_memory_pipeline_is_pure_and_node_ready(arrays):
    ds = tf.data.Dataset.from_tensor_slices(arrays).shuffle(20, seed=0).batch(4, drop_remainder=True)
    ds = ds.map(lambda x, y: (tf.cast(x, tf.int32), y)).prefetch(2)
    report = inspect_pipeline(ds)
    assert report.is_pure and report.node_ready and report.files == []
    assert report.op_counts["TensorSliceDataset"] == 1 and report.op_counts["MapDataset"] == 1
    assert "Pure tf.data" in report.explain()
    assert unknown_dims(ds.element_spec) == []


def test_local_tfrecords_are_pure_but_not_for_a_node(tfrecord, arrays):
    ds = parsed([tfrecord])
    report = inspect_pipeline(ds)
    assert report.is_pure and report.local_files == [tfrecord] and not report.node_ready
    assert "invisible to a TPU Node" in report.explain()
    first = next(iter(ds))
    assert (first["input_ids"].numpy() == arrays[0][:4]).all()  # the pipeline really reads the file


def test_gcs_tfrecords_are_node_ready():
    # built, never read: no network is touched
    report = inspect_pipeline(parsed(["gs://bucket/a.tfrecord", "gs://bucket/b.tfrecord"]))
    assert report.files == ["gs://bucket/a.tfrecord", "gs://bucket/b.tfrecord"] and report.node_ready
    assert "from gs://" in report.explain()


def test_list_files_reports_the_files_it_matched(tfrecord):
    ds = tf.data.Dataset.list_files(tfrecord, shuffle=False).interleave(tf.data.TFRecordDataset)
    report = inspect_pipeline(ds)
    assert report.is_pure and report.local_files == [tfrecord] and not report.node_ready


def test_names_passed_as_plain_tensors_are_not_seen(tfrecord):
    # the documented limit: names that reach a reader only inside your own interleave function
    ds = tf.data.Dataset.from_tensor_slices([tfrecord]).interleave(tf.data.TFRecordDataset)
    report = inspect_pipeline(ds)
    assert report.is_pure and report.files == [] and report.op_counts["TFRecordDataset"] == 1


def test_single_file_name_as_a_string(tfrecord):
    assert inspect_pipeline(tf.data.TFRecordDataset(tfrecord)).local_files == [tfrecord]


def test_py_function_numpy_function_and_generator_are_named():
    base = tf.data.Dataset.range(6)
    cases = {
        "py_function": base.map(lambda x: tf.py_function(lambda a: a * 2, [x], tf.int64)),
        "numpy_function": base.map(lambda x: tf.numpy_function(lambda a: a * 2, [x], tf.int64)),
        "from_generator": tf.data.Dataset.from_generator(lambda: iter(range(3)),
                                                         output_signature=tf.TensorSpec((), tf.int64)),
    }
    for kind, ds in cases.items():
        report = inspect_pipeline(ds)
        assert report.kinds == {kind}, (kind, report.findings)
        assert len(report.findings) == 1  # from_generator's three PyFuncs are one finding
        assert not report.is_pure and not report.node_ready
        assert EXPLANATIONS[kind] in report.explain() and "TPU Node cannot run" in report.explain()
    stateless = base.map(lambda x: tf.numpy_function(lambda a: a, [x], tf.int64, stateful=False))
    assert inspect_pipeline(stateless).kinds == {"numpy_function"}


def test_python_ops_nested_in_interleave_and_flat_map_functions():
    inner = lambda x: tf.data.Dataset.from_tensors(x).map(  # noqa: E731
        lambda y: tf.numpy_function(lambda a: a + 1, [y], tf.int64))
    ds = tf.data.Dataset.range(4).interleave(inner, cycle_length=2).flat_map(tf.data.Dataset.from_tensors)
    assert inspect_pipeline(ds).kinds == {"numpy_function"}


def test_to_tf_dataset_is_not_pure():
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict({"input_ids": [[1, 2, 3, 4]] * 16, "label": [0, 1] * 8})
    ds = hf.to_tf_dataset(columns="input_ids", label_cols="label", batch_size=4)
    report = inspect_pipeline(ds)
    assert report.kinds == {"py_function"} and not report.node_ready
    assert unknown_dims(ds.element_spec) == ["[0]: (None, 4)", "[1]: (None,)"]
    static = hf.to_tf_dataset(columns="input_ids", label_cols="label", batch_size=4, drop_remainder=True)
    assert unknown_dims(static.element_spec) == [] and not inspect_pipeline(static).is_pure
    workers = hf.to_tf_dataset(columns="input_ids", label_cols="label", batch_size=4, num_workers=2)
    assert inspect_pipeline(workers).kinds == {"from_generator"}  # nothing is started until iterated


def test_prepare_tf_dataset_is_not_pure():
    datasets = pytest.importorskip("datasets")
    from tpu_helpers.core.frameworks import use_framework

    use_framework("tf")
    from transformers import BertConfig, TFBertForSequenceClassification

    model = TFBertForSequenceClassification(BertConfig(
        vocab_size=32, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
        max_position_embeddings=8, num_labels=2))
    hf = datasets.Dataset.from_dict({"input_ids": [[1, 2, 3, 4]] * 8, "labels": [0, 1] * 4})
    ds = model.prepare_tf_dataset(hf, batch_size=4, shuffle=False)
    assert inspect_pipeline(ds).kinds == {"py_function"}


def test_unknown_dims_names_the_components():
    spec = {"input_ids": tf.TensorSpec((None, 128), tf.int32), "mask": tf.TensorSpec((8, 128), tf.int32)}
    assert unknown_dims((spec, tf.TensorSpec((None,), tf.int64))) == ["[0].input_ids: (None, 128)",
                                                                         "[1]: (None,)"]
    assert unknown_dims(tf.TensorSpec(None, tf.float32)) == ["element: <unknown>"]
