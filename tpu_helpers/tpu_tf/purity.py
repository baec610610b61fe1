"""Can a TPU Node run this pipeline? `inspect_pipeline` reads its serialised graph for Python ops and local files."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

PY_OPS = {"PyFunc": "numpy_function", "PyFuncStateless": "numpy_function", "EagerPyFunc": "py_function"}
FILE_DATASET_OPS = {"TFRecordDataset", "TFRecordDatasetV2", "TextLineDataset", "FixedLengthRecordDataset",
                    "FixedLengthRecordDatasetV2"}

_SERIAL = " On a TPU VM it works, but as serial Python under the GIL."
EXPLANATIONS = {
    "py_function": "tf.py_function (op EagerPyFunc) calls back into the notebook's Python for every element, which a "
                   "TPU Node's host cannot do (datasets' to_tf_dataset() fetches its rows this way)." + _SERIAL,
    "numpy_function": "tf.numpy_function (op PyFunc) runs NumPy code in the notebook's Python, which a TPU Node's host "
                      "cannot do: rewrite it with tf ops, or precompute and save the result." + _SERIAL,
    "from_generator": "Dataset.from_generator pulls every element from a Python generator of the notebook (PyFunc ops), "
                      "which a TPU Node cannot run (to_tf_dataset(num_workers>0) builds one)." + _SERIAL,
}


@dataclass
class PipelineReport:
    """What `inspect_pipeline` found. `is_pure`: no Python ops; `node_ready`: pure and no local files."""

    findings: list[str] = field(default_factory=list)  # one kind per Python op: py_function, numpy_function ...
    files: list[str] = field(default_factory=list)
    op_counts: Counter = field(default_factory=Counter)

    def __post_init__(self):
        self.is_pure, self.kinds = not self.findings, set(self.findings)
        self.local_files = [f for f in self.files if not f.startswith("gs://")]
        self.node_ready = self.is_pure and not self.local_files

    def explain(self) -> str:
        """Plain-language verdict, one paragraph per kind of finding."""
        lines = (["Pure tf.data: no Python ops; TensorFlow can run this pipeline anywhere."] if self.is_pure else
                 [f"Not pure: {len(self.findings)} Python op(s); a TPU Node cannot run this pipeline."]
                 + [f"- {kind}: {EXPLANATIONS[kind]}" for kind in dict.fromkeys(self.findings)])
        if self.local_files:
            lines.append(f"Reads {len(self.local_files)} local file(s) (e.g. {self.local_files[0]}): fine on a TPU VM, "
                         "invisible to a TPU Node; copy them to gs:// for a Node.")
        elif self.files:
            lines.append(f"Reads {len(self.files)} file(s) from gs://: every TPU can reach them.")
        return "\n".join(lines)


def _const_strings(node: Any) -> list[str]:
    import numpy as np
    import tensorflow as tf

    if node.op != "Const" or node.attr["value"].tensor.dtype != tf.string.as_datatype_enum:
        return []
    # the way tf.data reads its own file names back (Dataset._maybe_track_assets); make_ndarray fails on them
    values = tf.io.parse_tensor(node.attr["value"].tensor.SerializeToString(), tf.string).numpy()
    return [v.decode("utf-8", "replace") for v in np.reshape(values, -1)]  # a scalar too


def inspect_pipeline(dataset: Any) -> PipelineReport:
    """List the Python ops (py_function, numpy_function, from_generator) and files of a `tf.data.Dataset`."""
    import tensorflow as tf

    from tpu_helpers._compat import dataset_variant

    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(tf.raw_ops.DatasetToGraphV2(
        input_dataset=dataset_variant(dataset),  # the dataset's graph handle
        external_state_policy=1,  # IGNORE: serialise past stateful/Python ops, we want to list them
        strip_device_assignment=True).numpy())
    findings, files, op_counts = [], [], Counter()
    bodies = [("<pipeline>", list(graph_def.node))]
    bodies += [(f.signature.name, list(f.node_def)) for f in graph_def.library.function]
    op_counts.update(n.op for _, nodes in bodies for n in nodes)
    generator_fns = {n.attr[a].func.name for _, nodes in bodies for n in nodes if n.op == "GeneratorDataset"
                     for a in ("init_func", "next_func", "finalize_func") if a in n.attr}
    for fname, nodes in bodies:
        by_name = {n.name: n for n in nodes}
        for n in nodes:
            if n.op in PY_OPS:
                from_gen = fname in generator_fns or "from_generator" in fname
                kind = "from_generator" if from_gen else PY_OPS[n.op]
                if kind != "from_generator" or kind not in findings:  # one generator = three PyFuncs: once
                    findings.append(kind)
            elif (n.op in FILE_DATASET_OPS or n.name.startswith("FileIdentity")) and n.input:
                src = by_name.get(n.input[0].split(":")[0].lstrip("^"))
                if src is not None:
                    files.extend(f for f in _const_strings(src) if f not in files)
    return PipelineReport(findings, files, op_counts)


def unknown_dims(element_spec: Any, path: str = "") -> list[str]:
    """The components of an ``element_spec`` with an unknown (None) dimension: XLA compiles again when they change."""
    if isinstance(element_spec, dict):
        return [d for k in sorted(element_spec) for d in unknown_dims(element_spec[k], f"{path}.{k}" if path else k)]
    if isinstance(element_spec, (tuple, list)):
        return [d for i, v in enumerate(element_spec) for d in unknown_dims(v, f"{path}[{i}]")]
    shape = getattr(element_spec, "shape", None)
    if shape is None or not hasattr(shape, "rank") or (shape.rank is not None and None not in shape.as_list()):
        return []
    return [f"{path or 'element'}: {shape}"]
