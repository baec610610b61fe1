"""Notebook 04, a RoBERTa masked LM from scratch in TensorFlow (the lesson itself: `lesson_cells`)."""
FRAMEWORK = 'tf'  # the one framework this package may import
NOTEBOOK = '04_mlm_from_scratch_tensorflow'
