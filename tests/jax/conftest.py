"""tests/jax: notebook 09's package (banking77_jax). Neither TensorFlow nor torch can be imported here (the port's
comparison with transformers' BertModel lives in tests/torch). JAX runs on 8 simulated CPU devices, set before any
test imports jax, as notebook 09 does with ``REPLICAS = 8``."""
import os

from course_testing import guard_frameworks

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
guard_frameworks("jax", "jax")
