"""The registered threat models of a training audit: one module each, found by being here.

Each module declares ``THREAT_MODEL``, a :class:`~epsstar.audit.training_audit.threat_models.
ThreatModel`, and ``RANK``, its place among the others (in the command line's help, the JSON and
the report); :func:`~epsstar.audit.training_audit.threat_models.registered_threat_models` reads
them all. A black-box threat model needs nothing else: the procedures score its canaries by their
loss under the trained model. A white-box one needs its score from epsstar's own trainer
(``epsstar.training.threat_models.observer``), under its name.
"""
