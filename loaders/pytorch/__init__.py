"""Loaders of PyTorch's files: TorchScript archives (:mod:`.torchscript`, checked before loading
by :mod:`.torchscript_scan`) and ``torch.export`` programs (:mod:`.torch_export`)."""
