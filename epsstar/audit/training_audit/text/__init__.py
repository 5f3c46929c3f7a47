"""Text canaries for the audit of a language model's fine-tuning: their designs
(:mod:`.designs`), the tokenizer's check that every secret is trained on (:mod:`.tokens`) and
their scores under the model a run saved (:mod:`.scoring`)."""
