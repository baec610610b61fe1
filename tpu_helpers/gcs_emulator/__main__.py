"""``python -m tpu_helpers.gcs_emulator --bucket NAME``: run the emulator until Ctrl-C (see `server._main`)."""
import sys

from .server import _main

raise SystemExit(_main(sys.argv[1:]))
