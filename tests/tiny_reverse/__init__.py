"""A tiny task used by the tests to show what adding a task takes: this one folder, one registry line
(``pelab.tasks.TASKS["tiny_reverse"] = ReverseTask`` in its test; a line of that dict in the package) and its params
section. Reverse a digit string in one encoder pass: ``d1 … dL <sep> _ …`` -> ``… <sep> dL … d1``."""
