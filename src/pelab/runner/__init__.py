"""The study runner: train, reload and evaluate the runs of any registered task.

``train.train_runs`` trains the seeds of one (task, scheme) into run directories (``kept_runs`` keeps them for
the next run of the stage); ``checkpoint.load_run`` rebuilds a run's model from the config saved beside its
weights; ``evaluate.evaluate_run`` scores it with the task's evaluation. DVC runs one training and one
evaluation stage per (task, scheme); ``pelab run`` trains and evaluates one seed outside DVC.
"""
