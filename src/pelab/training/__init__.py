"""Training loops, schedules and seeding."""
