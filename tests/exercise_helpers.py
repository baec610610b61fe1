"""Shared pieces of the exercise-check tests: a failure that names the problem, and the learner's skeleton."""


def failed(result, *phrases):
    """The check failed on an attempted answer and its message names the problem."""
    assert not result.passed and result.attempted, result
    for phrase in phrases:
        assert phrase in result.message, (phrase, result.message)
    return True


def skeleton(*args, **kwargs):
    raise NotImplementedError  # YOUR ANSWER
