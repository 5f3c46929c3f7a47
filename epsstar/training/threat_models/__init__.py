"""epsstar's own DP-SGD trainer as a procedure under audit, seen from inside.

:class:`~.own_trainer.OwnTrainer` is the :class:`~epsstar.audit.training_audit.procedure.
Procedure` of ``epsstar audit-training`` without ``--command``: it trains in this process with
:func:`epsstar.training.trainer.train`, whose :class:`~epsstar.training.trainer.StepHooks` let it
add gradient canaries to the clipped sum (:mod:`.gradient_canaries`) and see every step's noisy
gradient sum (:mod:`.observer`), so that it serves the white-box threat models of
Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for Differentially Private Machine
Learning" and the DI adversary of Bernau et al. 2021, "Quantifying identifiability to choose and
audit ε in differentially private deep learning" besides the black-box ones.
:class:`~.own_trainer.Breakage` breaks the trainer on purpose (no noise, no clipping, a tenth of the
noise, noise once per epoch) for the tests and the benchmark that show the audit catches it.
"""
