"""./course run's budget table (180 s a notebook, 12 min in all on cpu/ci) and its slowest-cells report."""
import json

import pytest
import run_budgets
from run_budgets import Budget, budget_for, cell_times, results_table, slowest_cells_report


def test_budgets_per_profile():
    assert budget_for("cpu") == budget_for("ci") == Budget(180.0, 720.0)
    assert budget_for("tpu") == Budget(None, None)


def rows(*seconds, status="ok"):
    return [(f"0{i}_nb.ipynb", status, s, f"fig={i}") for i, s in enumerate(seconds)]


def test_each_notebook_over_its_budget_is_flagged_with_the_overrun():
    table, over = results_table(rows(25.0, 180.0, 395.4), budget_for("cpu"))
    lines = table.splitlines()
    assert over == ["02_nb.ipynb"]
    assert lines[0].split()[:5] == ["notebook", "status", "seconds", "budget", "key"]
    assert lines[1].split()[:5] == ["00_nb.ipynb", "ok", "25", "180", "ok"]
    assert lines[2].split()[:5] == ["01_nb.ipynb", "ok", "180", "180", "ok"]  # at the budget is within it
    assert lines[3].split()[:6] == ["02_nb.ipynb", "ok", "395", "180", "OVER", "+215"]
    assert lines[3].endswith("fig=2") and lines[1].endswith("fig=0")
    assert lines[4].split() == ["total", "600", "720", "ok"]
    assert "over: 02_nb.ipynb" in lines[5]


def test_the_whole_run_over_twelve_minutes_is_flagged_even_when_each_notebook_is_within():
    table, over = results_table(rows(*[170.0] * 5), budget_for("cpu"))
    assert over == ["total"]
    total = next(line for line in table.splitlines() if line.startswith("total"))
    assert total.split() == ["total", "850", "720", "OVER", "+130", "s"]


def test_issue_19_measurement_flags_four_notebooks_and_the_total():
    _, over = results_table(rows(25, 54, 53, 48, 395, 287, 139), budget_for("cpu"))
    assert over == ["04_nb.ipynb", "05_nb.ipynb", "total"]


def test_failed_notebooks_show_their_status_word_and_still_count():
    table, over = results_table(rows(200.0, status="FAILED: RuntimeError: boom"), budget_for("ci"))
    assert table.splitlines()[1].split()[:4] == ["00_nb.ipynb", "FAILED", "200", "180"]
    assert over == ["00_nb.ipynb"]


def test_no_budget_columns_on_the_tpu_profile():
    table, over = results_table(rows(5000.0), budget_for("tpu"))
    assert over == [] and "budget" not in table and "OVER" not in table
    assert table.splitlines()[1].split()[:3] == ["00_nb.ipynb", "ok", "5000"]


def write_executed(path, durations):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# title"}]
    for i, d in enumerate(durations):
        md = {"papermill": {"duration": d, "status": "completed"}} if d is not None else {"papermill": {}}
        cells.append({"cell_type": "code", "metadata": md, "execution_count": i + 1 if d is not None else None,
                      "source": [f"# step {i}\n", f"work({i})\n"], "outputs": []})
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_cell_times_read_papermill_durations_and_skip_cells_never_run(tmp_path):
    nb = write_executed(tmp_path / "04_x.ipynb", [0.5, 30.0, None, 2.0])
    times = cell_times(nb)
    assert [(c.index, c.execution_count, c.seconds, c.first_line) for c in times] == [
        (1, 1, 0.5, "work(0)"), (2, 2, 30.0, "work(1)"), (4, 4, 2.0, "work(3)")]


def test_slowest_cells_report_orders_by_time_and_accounts_for_the_rest(tmp_path):
    nb = write_executed(tmp_path / "04_x.ipynb", [0.5, 30.0, 7.5, 2.0])
    report = slowest_cells_report(nb, 2, notebook_seconds=50.0).splitlines()
    assert report[0] == "04_x.ipynb: 4 cells ran, 40.0 s in cells of 50.0 s (10.0 s kernel start and papermill)"
    assert len(report) == 3
    assert report[1].split()[:5] == ["30.0", "s", "75", "%", "cell"] and report[1].endswith("work(1)")
    assert report[2].split()[:3] == ["7.5", "s", "19"] and report[2].endswith("work(2)")


@pytest.mark.parametrize("content", [None, {"cells": []}])
def test_slowest_cells_report_without_a_run_says_so(tmp_path, content):
    nb = tmp_path / "05_x.ipynb"
    if content is not None:
        nb.write_text(json.dumps(content))
    out = slowest_cells_report(nb, 3)
    assert out.startswith("05_x.ipynb: no ") and "\n" not in out
    assert run_budgets.NOTEBOOK_BUDGET_S == 180.0


def test_command_line_profiles_notebooks_already_run(tmp_path, capsys):
    nb = write_executed(tmp_path / "05_x.ipynb", [1.0, 4.0, 2.0])
    assert run_budgets.main(["--top", "1", str(nb), str(tmp_path / "06_missing.ipynb")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "05_x.ipynb: 3 cells ran, 7.0 s in cells" and out[1].endswith("work(1)")
    assert out[2] == "06_missing.ipynb: no executed notebook to profile"
