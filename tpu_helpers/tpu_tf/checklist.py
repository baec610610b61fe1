"""The TPU-readiness checklist of notebooks 03 and 04: scope, replicas in sync, jit_compile, static, pure data."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from tpu_helpers.xla_tf.lesson_cells import jit_compile_for, strategy_kind


def variables_outside_scope(strategy: Any, variables: Iterable[Any]) -> list[str]:
    """Names of the variables that were *not* created under ``strategy.scope()``."""
    return [getattr(v, "name", repr(v)) for v in variables
            if not strategy.extended.variable_created_in_scope(v)]


@dataclass
class CheckItem:
    """One line of the TPU-readiness checklist: `ok` is True/False, or None when it cannot be checked here."""

    item: str
    ok: bool | None
    detail: str = ""

    def __str__(self) -> str:
        mark = {True: "[x]", False: "[ ]", None: "[?]"}[self.ok]
        return f"{mark} {self.item}{': ' + self.detail if self.detail else ''}"


def tpu_checklist(strategy: Any, model: Any = None, dataset: Any = None, xla_trained: bool | None = None) -> list[CheckItem]:
    """The closing checklist of Hugging Face's TPU guide, on your objects (`xla_trained` None: not checked)."""
    from tpu_helpers.tpu_tf.purity import inspect_pipeline, unknown_dims

    items = []
    if model is not None or xla_trained is not None:
        items.append(CheckItem("model trained with jit_compile=True on CPU/GPU first (the three XLA rules hold)",
                               xla_trained, "" if xla_trained is not None else "not checked here"))
    if dataset is not None:
        report = inspect_pipeline(dataset)
        items.append(CheckItem("data pipeline is pure tf.data (a TPU Node can run it)", report.is_pure,
                               "" if report.is_pure else "; ".join(sorted(report.kinds))))
        local = report.local_files
        files_detail = f"reads {len(local)} local file(s): fine on a TPU VM" if local else ""
        items.append(CheckItem("data is in memory or gs:// (no local files, for a TPU Node)", not local if
                               report.is_pure else None, files_detail if report.is_pure else
                               "cannot tell: its Python ops may read local files (to_tf_dataset does)"))
        dims = unknown_dims(dataset.element_spec)
        items.append(CheckItem("every shape in element_spec is static (drop_remainder=True, fixed padding)",
                               not dims, ", ".join(dims)))
    if model is not None:
        variables = list(model.variables) + list(getattr(getattr(model, "optimizer", None), "variables", []))
        outside = variables_outside_scope(strategy, variables)
        items.append(CheckItem("model and optimizer created inside strategy.scope()", not outside,
                               f"{len(outside)} variable(s) outside, e.g. {outside[0]}" if outside
                               else f"{len(variables)} variables checked"))
        decision, jit_compile = jit_compile_for(strategy), getattr(model, "jit_compile", None)
        items.append(CheckItem(f"jit_compile={decision.enabled} for this strategy ({strategy_kind(strategy)})",
                               None if jit_compile is None else bool(jit_compile) == decision.enabled, decision.reason))
    return items

