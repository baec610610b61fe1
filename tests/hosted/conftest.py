"""tests/hosted: today's Colab and Kaggle TPU runtimes rehearsed on this CPU (tools/rehearse_hosted.py). No ML
framework is imported here: each rehearsal runs in its own environment on the image's Python."""
from course_testing import guard_frameworks

guard_frameworks("hosted", None)
