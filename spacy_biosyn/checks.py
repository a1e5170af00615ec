"""What a setting may be, checked where each setting is taken. A leaf
module: anything may import it, it imports nothing of the package."""
import inspect
import math
import reprlib

# A value as an error message shows it: a saved file's JSON may nest a
# thousand levels deep or hold megabytes, and repr() of it would recurse or
# fill the line; this one stops at three levels and 80 characters.
_BRIEF = reprlib.Repr()  # keyword arguments only from Python 3.12
_BRIEF.maxlevel, _BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlist, _BRIEF.maxdict = 3, 60, 60, 6, 6


def brief(value) -> str:
    """`value`'s repr, cut to what one line of an error message holds."""
    return _BRIEF.repr(value)[:80]


def is_number(value) -> bool:
    """A finite int or float, not a bool (true would pass as 1)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# The most a part's size setting may be: a batch of more texts, or a text
# of more tokens, than any machine's memory holds one encoder run of; past
# them a typo (a batch_size of 10**9) would start an allocation that swaps
# or a loop that never ends, not a refusal.
MOST_IN_A_BATCH = 1 << 16
MOST_TOKENS = 1 << 13


def is_whole_number(value, least: int, most: float = math.inf) -> bool:
    """An int from least to most, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= most


def is_weight(value) -> bool:
    """What lambda may be: a number >= 0."""
    return is_number(value) and value >= 0


def takes_arguments(value, count: int) -> bool:
    """A callable that accepts `count` positional arguments (one whose
    signature Python cannot read is taken at its word)."""
    if not callable(value):
        return False
    try:
        inspect.signature(value).bind(*range(count))
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def same_value(saved: object, now: object) -> bool:
    """Equal as JSON writes them (a config's tuple is a saved list), with
    numbers written with fewer digits alike (a trained lambda, float32, is
    0.17805761098861694 in the pipe and 0.178057611 in config.cfg)."""
    if isinstance(saved, (int, float)) and isinstance(now, (int, float)) and not isinstance(now, bool):
        return math.isclose(saved, now, rel_tol=1e-6)
    if isinstance(saved, dict) and isinstance(now, dict):
        return saved.keys() == now.keys() and all(same_value(saved[k], now[k]) for k in saved)
    if isinstance(saved, (list, tuple)) and isinstance(now, (list, tuple)):
        return len(saved) == len(now) and all(same_value(a, b) for a, b in zip(saved, now))
    return saved == now
