"""Notebook 10, a small LLM fine-tuned with LoRA over every chip, weights sharded with FSDPv2 (lesson_cells.py: generated)."""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '10_llm_lora_fsdp'
