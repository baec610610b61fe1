"""No import cycle between tpu_helpers' modules (tools/import_cycles.py: every import parsed, those inside
functions included), and the checker finds one where there is one."""
import textwrap

import import_cycles
from import_cycles import find_cycles, import_graph, module_files


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "tpu_helpers.mlm.corpus" in graph and len(graph) == len(module_files())
    cycles = find_cycles(graph)
    assert not cycles, "import cycles between tpu_helpers modules: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_mlm_corpus_imports_sources_and_sources_not_corpus():
    graph = import_graph()
    assert "tpu_helpers.mlm.sources" in graph["tpu_helpers.mlm.corpus"]
    assert "tpu_helpers.mlm.corpus" not in graph["tpu_helpers.mlm.sources"]


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_a_cycle_hidden_inside_a_function_is_found(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/sub/__init__.py", "")
    write(tmp_path, "pkg/sub/a.py", "from pkg.sub.b import B\n")
    write(tmp_path, "pkg/sub/b.py", """\
        B = 1
        def load():
            from pkg.sub import a
            return a
        """)
    write(tmp_path, "pkg/sub/c.py", "from . import a\nfrom .b import B\n")  # relative imports, no cycle
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.sub.c"] == {"pkg.sub.a", "pkg.sub.b"}
    assert find_cycles(graph) == [["pkg.sub.a", "pkg.sub.b"]]


def test_a_package_init_is_not_an_edge_from_its_own_submodules(tmp_path):
    write(tmp_path, "pkg/__init__.py", "from pkg import a\n")
    write(tmp_path, "pkg/a.py", "import pkg\nfrom pkg import b\n")
    write(tmp_path, "pkg/b.py", "")
    graph = import_graph(tmp_path, "pkg")
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": set()}
    assert find_cycles(graph) == []


def test_main_says_how_many(capsys):
    assert import_cycles.main() == 0
    assert "0 import cycles" in capsys.readouterr().out
