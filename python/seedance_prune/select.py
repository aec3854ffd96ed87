def select(*a, **k): raise NotImplementedError
class NoConfigFits(Exception): pass
