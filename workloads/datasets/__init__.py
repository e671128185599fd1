"""Prompt data sets: ShareGPT, JSONL or CSV of prompts, Mooncake-style traces with `hash_ids`.

`load_dataset(path, fmt)` (`loaders`) reads a file into a `Dataset` of `Conversation`s of
`Prompt` turns (`model`): the one data model the live driver and the sim engines read.
"""

from workloads.datasets.loaders import detect_format, load_dataset
from workloads.datasets.model import Conversation, Dataset, DatasetError, DatasetFormat, Message, Prompt

__all__ = ["Conversation", "Dataset", "DatasetError", "DatasetFormat", "Message", "Prompt", "detect_format",
           "load_dataset"]
