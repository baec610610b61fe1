"""English-like paragraphs from a seed, the same on every machine (notebook 01's lengths, notebook 04's offline corpus)."""
import random
from typing import Iterator

VERSION = 1  # change when the generator's output changes (caches key on it)

_NOUNS = tuple("""system model data time value result process user file network number student teacher city river
    market company letter garden window question answer problem method table record report machine signal engine
    library account payment card transfer device message station village mountain forest island bridge road train
    ticket doctor patient story song picture paper school office meeting program language word sentence book page
    chapter teacher worker farmer engineer artist leader member family friend neighbour season winter summer morning
    evening light sound colour shape size price order package delivery service contract policy budget project plan
    idea experiment measurement sample batch graph compiler kernel memory buffer shard bucket token layer weight
    gradient device cluster replica core""".split())
_ADJECTIVES = tuple("""new old small large simple complex quick slow bright dark early late common rare useful careful
    important public private local global static dynamic empty full long short warm cold quiet busy clear exact
    different similar strong weak open closed first last next main final single double ordinary special fixed random
    heavy light""".split())
_VERBS = tuple("""reads writes builds opens closes checks measures finds keeps sends receives changes holds starts
    stops moves shows follows needs uses creates removes compiles trains loads saves counts compares explains
    describes carries visits watches answers asks learns teaches pays orders""".split())
_ADVERBS = tuple("""quickly slowly carefully often rarely always never again together already still usually early
    later exactly clearly quietly simply""".split())
_PREPOSITIONS = tuple("""in on near under over with without before after across through behind beside between from
    into for about along around""".split())
_CONNECTORS = tuple("""and but so because while although when after before until""".split())
_OPENERS = ("Then", "Later", "Meanwhile", "Still", "However", "Often", "In the end", "At first", "Every day",
            "In winter", "On most days", "For a while")


_ZIPF_WEIGHTS: dict[int, list[float]] = {}


def _zipf(rng: random.Random, words: tuple[str, ...]) -> str:
    """One word, weight 1/rank, as in natural text."""
    weights = _ZIPF_WEIGHTS.setdefault(len(words), [1.0 / (r + 1) for r in range(len(words))])
    return rng.choices(words, weights=weights)[0]


def _make_names(n: int = 600) -> tuple[str, ...]:
    """Proper names from syllables: an open vocabulary of rare words."""
    onsets = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "br", "tr", "st", "kl", "dr")
    vowels = ("a", "e", "i", "o", "u", "ai", "ea", "io")
    codas = ("", "n", "r", "l", "s", "th", "m", "nd")
    rng = random.Random(f"tpu-course-names-v{VERSION}")
    names: dict[str, None] = {}  # distinct, in the order drawn
    while len(names) < n:
        name = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.choice((2, 2, 3)))) + rng.choice(codas)
        names[name.capitalize()] = None
    return tuple(names)


_NAMES = _make_names()


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _base(verb: str) -> str:  # reads -> read, carries -> carry, watches -> watch
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes")):
        return verb[:-2]
    return verb[:-1]


def _noun_phrase(rng: random.Random) -> tuple[str, bool]:  # and whether it is plural
    if rng.random() < 0.12:
        return _zipf(rng, _NAMES), False
    plural = rng.random() < 0.3
    det = rng.choice(("the", "the", "these", "many", "some", "our", "their", "two", "several") if plural else
                     ("the", "the", "a", "this", "every", "each", "one", "our", "their"))
    noun = _zipf(rng, _NOUNS)
    words = [_zipf(rng, _ADJECTIVES) for _ in range(rng.choice((0, 0, 1, 1, 2)))] + [_plural(noun) if plural else noun]
    if det == "a" and words[0][0] in "aeiou":
        det = "an"
    return " ".join([det, *words]), plural


def _clause(rng: random.Random) -> str:
    subject, plural = _noun_phrase(rng)
    parts = [subject]
    if rng.random() < 0.25:
        parts.append(_zipf(rng, _ADVERBS))
    verb = _zipf(rng, _VERBS)
    if rng.random() < 0.2:
        parts += [rng.choice(("will", "can", "must", "should", "may")), _base(verb)]
    else:
        parts.append(_base(verb) if plural else verb)
    parts.append(_noun_phrase(rng)[0])
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        parts += [_zipf(rng, _PREPOSITIONS), _noun_phrase(rng)[0]]
    return " ".join(parts)


def _sentence(rng: random.Random) -> str:
    """One to three clauses, sometimes an opener, capitalised, with a full stop."""
    clauses = [_clause(rng)]
    while len(clauses) < 3 and rng.random() < 0.35:
        clauses.append(rng.choice(_CONNECTORS) + " " + _clause(rng))
    text = ", ".join(clauses) if len(clauses) > 1 and rng.random() < 0.5 else " ".join(clauses)
    if rng.random() < 0.2:
        text = f"{rng.choice(_OPENERS)}, {text}"
    return text[0].upper() + text[1:] + "."


def iter_paragraphs(max_chars: int | None = None, *, seed: int = 0, n: int | None = None) -> Iterator[str]:
    """Paragraphs of 1 to about 12 sentences (log-normal), until ``n`` paragraphs or ``max_chars`` characters."""
    rng = random.Random(f"tpu-course-text-v{VERSION}-{seed}")
    total = count = 0
    while (n is None or count < n) and (max_chars is None or total < max_chars):
        k = max(1, min(40, round(rng.lognormvariate(0.9, 0.8))))
        text = " ".join(_sentence(rng) for _ in range(k))
        yield text
        count += 1
        total += len(text) + 1


def paragraphs(n: int, *, seed: int = 0) -> list[str]:
    """``n`` paragraphs (deterministic for a seed)."""
    return list(iter_paragraphs(seed=seed, n=n))
