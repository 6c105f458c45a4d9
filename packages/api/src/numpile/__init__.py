"""numpile: a just-in-time compiler for plain NumPy programs."""

__version__ = "0.1.0"

__all__: list[str] = []
