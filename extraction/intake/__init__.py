"""Intake, one way down: `staging` (the web tier) -> `decision` (the intake worker) -> `rounds` -> `queue`.

`validation` judges the bytes and `submission` is the model of one upload on its way; `admin` shows it. Callers enter
at one module each: the API, the admin upload, `submit_bundle` and the body limits at `staging`; the intake task and
the reconciler at `decision`; a re-extraction at `rounds`. Nothing is imported here, so the model can load with the
app's models before the modules that use them.
"""
