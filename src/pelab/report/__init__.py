"""Figures and the generated report; they read only the tidy records and saved runs."""
