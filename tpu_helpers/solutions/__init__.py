"""Reference answers to the notebooks' exercises, one module per notebook (``nb01.py`` for notebook 01).

Open these on purpose, after trying. The notebooks use them only when solutions are switched on
(``SOLUTIONS = True`` in the parameters cell, or ``TPU_COURSE_SOLUTIONS=1``), which is how CI proves that
every exercise check passes on a right answer.
"""
