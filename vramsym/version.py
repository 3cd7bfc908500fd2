"""vramsym's version: ground, so that the cache key, the exports' headers and the page read it
without importing the façade."""

__version__ = "0.2.0"
