"""Pure statistics: arrays in, frozen results out.

Losses from predictions, the Appendix-B transform, fitted distributions and tail
models, goodness of fit, trade-off curves, the eq.-7 ratios, the supremum search,
the Epsilon* estimators, confidence bounds and conversions
(``epsilon-star-negoescu-2024.md``). Nothing here reads or writes files, prints,
or imports pandas: the layers above hand in arrays and read frozen records back.
"""
