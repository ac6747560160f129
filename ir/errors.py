"""The one exception type the IR raises for malformed models."""


class IRError(ValueError):
    """A model (built in memory or loaded from JSON) violates the IR format.

    The message always starts with the path of the offending field, e.g.
    ``nodes[2].threshold: expected 15 values, got 14``, so that a user can find
    it in the file.
    """
