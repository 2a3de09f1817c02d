"""A tiny task used by the tests to show what adding a task takes: this one folder, one registry line
(``pelab.tasks.register_task`` here; a line in ``pelab.tasks._BUILDERS`` in the package) and its params
section. Reverse a digit string in one encoder pass: ``d1 … dL <sep> _ …`` -> ``… <sep> dL … d1``."""
