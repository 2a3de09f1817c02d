"""The study runner: train, reload and evaluate one (task, scheme, seed) run of any registered task.

``train.train_run`` writes a run directory; ``checkpoint.load_run`` rebuilds its model from the config
saved beside the weights; ``evaluate.evaluate_run`` scores it with the task's evaluation. DVC runs each
as one stage per (task, scheme, seed); ``pelab run`` runs them outside DVC.
"""
