"""tpu_helpers: the code the tpu-course notebooks share; imports no ML framework at this level."""
