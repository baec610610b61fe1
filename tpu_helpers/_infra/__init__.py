"""Machinery learners never read: the local GCS emulator (certificates, proxy, server).
"""
FRAMEWORK = None  # the framework this package's modules may import (tests/conventions enforce it)
