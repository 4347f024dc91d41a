"""hwcheck's version, in a module of its own so that every layer can read it without importing
checker/__init__.py (which imports the notebook's `check`).
"""

__version__ = "0.1.0"
