"""pytest: docs/conf.py is Sphinx's configuration, not a module with doctests.

``--doctest-modules`` (pyproject.toml) would import it whenever ``docs/`` is collected
(``python -m pytest .``), installing its warning hook in the test session.
"""

collect_ignore = ["conf.py"]
