"""./course run starts each notebook's kernel over IPC sockets in a private folder: no TCP warning, no litter."""
import os

import nbformat
import papermill
import run_course


def test_kernel_runs_over_ipc_without_the_tcp_warning(tmp_path, capfd):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import os\nprint(os.getpid())")])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    sockets = tmp_path / "sockets"
    sockets.mkdir()
    config = run_course.ipc_kernel_config(str(sockets))
    assert config.KernelManager.transport == "ipc"
    papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"), cwd=str(tmp_path),
                               progress_bar=False, config=config)
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert out.cells[0].outputs[0]["text"].strip().isdigit(), "the kernel ran the cell"
    captured = capfd.readouterr()
    assert "without encryption" not in captured.out + captured.err
    assert os.listdir(sockets) == [], "the kernel's sockets are removed when it shuts down"
    assert sorted(os.listdir(tmp_path)) == ["in.ipynb", "out.ipynb", "sockets"], "nothing written to the cwd"
