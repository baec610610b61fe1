"""The generated English-like text: deterministic per seed, long-tailed lengths, Zipf-like words."""
from collections import Counter

import numpy as np

from tpu_helpers.shared import synthetic_text


def test_same_seed_same_text_other_seed_other_text():
    a = synthetic_text.paragraphs(50, seed=3)
    assert a == synthetic_text.paragraphs(50, seed=3) and a != synthetic_text.paragraphs(50, seed=4)
    assert synthetic_text.paragraphs(10, seed=3) == a[:10]
    assert list(synthetic_text.iter_paragraphs(seed=3, n=10)) == a[:10]


def test_lengths_have_a_long_tail_and_words_a_zipf_like_frequency():
    paras = synthetic_text.paragraphs(2000, seed=0)
    words = np.array([len(p.split()) for p in paras])
    assert words.min() >= 4 and np.median(words) < 80 and words.max() > 5 * np.median(words)
    counts = Counter(w.strip(".,").lower() for p in paras for w in p.split())
    ranked = [c for _, c in counts.most_common()]
    assert len(counts) > 300 and ranked[0] > 20 * ranked[len(ranked) // 2]  # frequent words dominate
    assert all(p[0].isupper() and p.endswith(".") for p in paras)
    assert " a a" not in " ".join(paras) and not any(f" a {v}" in " ".join(paras) for v in "aeiou")


def test_max_chars_bounds_the_stream():
    text = list(synthetic_text.iter_paragraphs(max_chars=5000))
    assert 5000 <= sum(len(t) + 1 for t in text) < 5000 + len(text[-1]) + 1
