"""Translation data: raw parallel corpora (verified), a joint BPE tokenizer and token-id splits.

``prepare`` is what the ``prepare@translation`` stage runs; ``load_prepared`` reads its output.
"""

from pelab.tasks.translation.data.prepare import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    PreparedTranslation,
    decode,
    encode,
    load_prepared,
    pad_sequences,
    prepare,
    prepare_translation_data,
    teacher_forcing_batch,
    train_tokenizer,
)

__all__ = [
    "BOS_ID", "EOS_ID", "PAD_ID", "SPECIAL_TOKENS", "UNK_ID", "PreparedTranslation", "decode", "encode",
    "load_prepared", "pad_sequences", "prepare", "prepare_translation_data", "teacher_forcing_batch",
    "train_tokenizer",
]
