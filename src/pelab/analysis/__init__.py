"""The references' analyses as pure functions: tables, matrices and numbers in, numbers and arrays out.

Nothing here plots or writes files; ``pelab.report.analysis_figures`` draws what these return and
``pelab.report.analysis_section`` writes the report's sentences from the same numbers.
"""
