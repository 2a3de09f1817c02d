"""The references' analyses as pure functions: tables, matrices and numbers in, numbers and arrays out.

Nothing here plots or writes files; ``pelab.report.analysis_figures`` draws what these return and
``pelab.report.sections`` write the report's sentences from the same numbers.
"""
