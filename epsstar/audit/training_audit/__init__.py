"""Auditing a training procedure that claims (ε, δ)-DP: canaries, runs, guesses, bounds.

``epsstar audit-training`` asks whether a training procedure can keep the ε it claims
(Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for Differentially Private Machine
Learning"; Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training Run";
Bernau et al. 2021, "Quantifying identifiability to choose and audit ε in differentially private
deep learning"). Canaries are drawn (:mod:`.canaries`) and included in a run's training
table at random (:mod:`.frames`); the procedure under audit trains on it — any command given as a
template (:mod:`.external.command`, the model it saves found by :mod:`.external.saved_model`
and scored by :mod:`.external.scoring`), or epsstar's own trainer
(``epsstar.training.threat_models``, which also sees inside the training for the white-box
threat models of :mod:`.threat_models`); one run or many (:mod:`.runs`, through the engines
of ``audit-many``, resumable with :mod:`.store`) turn the canaries' scores into the lower
bounds of ``epsstar.statistics.auditing`` (:mod:`.audit`), one
:class:`~.result.TrainingAuditResult` with the figures of its report (:mod:`.figures`).

The procedures meet this room through :class:`~.procedure.Procedure`: a request to train once
(:class:`~.procedure.RunRequest`) in, the canaries' scores (:class:`~.procedure.RunScores`)
out.
"""
