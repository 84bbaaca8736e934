"""The package version (its own module, so that any layer can name it without importing the package's API)."""

__version__ = "0.1.0"
