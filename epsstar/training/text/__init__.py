"""DP-SGD fine-tuning of a Hugging Face causal language model on text records
(``epsstar train --text-column``): the settings (:mod:`.settings`), the records as token ids
(:mod:`.records`), the per-example clipped sum through ``torch.func`` (:mod:`.per_example`),
LoRA adapters (:mod:`.lora`), the loop (:mod:`.trainer`), its record (:mod:`.results`) and
the output folder (:mod:`.folder`). The privacy plan and the accountant are the tables'
(:func:`epsstar.training.trainer.plan_privacy`)."""
