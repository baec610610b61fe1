"""What two lessons use and no ML framework needs: padding arithmetic and seeded synthetic text."""
FRAMEWORK = None  # the framework this package's modules may import (tests/conventions enforce it)
