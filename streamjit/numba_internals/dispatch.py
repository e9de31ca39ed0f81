"""Numba's dispatchers and pickling: the pipeline class a dispatcher
compiles with, its cache, its identity when unpickled, and the protocol of
Numba's pickler (``numba.core.serialize.ReduceMixin``) under public names.
"""

from numba.core.serialize import ReduceMixin


class Reducible(ReduceMixin):
    """Pickled by Numba's protocol: ``pickled_states()`` is a dict of what
    to keep, and the class method ``from_pickled_states(**states)`` makes
    the object again."""

    def pickled_states(self):
        raise NotImplementedError

    @classmethod
    def from_pickled_states(cls, **states):
        raise NotImplementedError

    def _reduce_states(self):
        return self.pickled_states()

    @classmethod
    def _rebuild(cls, **states):
        return cls.from_pickled_states(**states)


def set_pipeline_class(dispatcher, pipeline_class):
    """Have ``dispatcher`` compile its next signatures with ``pipeline_class``."""
    dispatcher._compiler.pipeline_class = pipeline_class


def dispatcher_cache(dispatcher):
    """The cache ``dispatcher`` loads and saves compile results through
    (Numba's ``NullCache`` when caching is off)."""
    return dispatcher._cache


def set_dispatcher_cache(dispatcher, cache):
    """Give ``dispatcher`` the on-disk cache ``cache`` (``cache=True``: a
    `cache.StreamFunctionCache`, keyed by the stream options too)."""
    dispatcher._cache = cache


def dispatcher_uuid(dispatcher):
    """The identity a pickled dispatcher carries: unpickled twice in one
    process, it is one object."""
    return str(dispatcher._uuid)


def set_dispatcher_uuid(dispatcher, uuid):
    """Give an unpickled ``dispatcher`` the identity it was pickled with."""
    dispatcher._set_uuid(uuid)


def unpickled_dispatcher(cls, uuid):
    """The dispatcher of class ``cls`` already alive with the identity ``uuid``, or None."""
    return cls._memo.get(uuid)
