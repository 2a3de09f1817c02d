"""The DVC pipeline written from the study records (``pelab.studies.STUDIES``): ``pelab pipeline`` writes
``dvc.yaml`` and one ``pipelines/<study>/dvc.yaml`` per study; each stage's code dependencies are the import closure
of the script it runs (``pelab.closure``)."""
