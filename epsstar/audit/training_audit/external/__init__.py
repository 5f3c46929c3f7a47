"""Procedures from outside epsstar: a command run without a shell (:mod:`.command`), the one
model it or a function saves, found as ``epsstar audit`` finds one (:mod:`.saved_model`), and
the canaries scored under it (:mod:`.scoring`)."""
