"""Loaders for the native files of further model libraries (each an optional extra): the
gradient-boosted trees of LightGBM, XGBoost (their categorical splits read by
:mod:`.categories`) and CatBoost, and Keras."""
