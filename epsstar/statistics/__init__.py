"""Pure statistics: arrays in, frozen results out.

Losses from predictions, the Appendix-B transform, fitted distributions and tail
models, goodness of fit, trade-off curves, the eq.-7 ratios, the supremum search,
the Epsilon* estimators, confidence bounds and conversions
(Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models"). Nothing here reads
or writes files, prints, or imports pandas: the layers above hand in arrays and read frozen records
back.
"""
