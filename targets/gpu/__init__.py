"""The torch side of a live target: real models on a GPU (or the CPU), nothing downloaded.

Entry points:

- `models.create_model(name, seed, device) -> ModelHandle`: a seeded model (mlp, cnn,
  transformer) that validates and collates JSON inputs.
- `executor.TorchExecutor`: one GPU worker's forward passes off the event loop, timed
  (`measure_batch`, what `harness profile` measures); `resolve_device`, `describe_device`.
- `worker.torch_gpus(...)`: `GpuPool` workers (`TorchGpu`) on those executors.

Only this package and the LLM's decoder import torch (import-linter's contracts in
pyproject.toml); a sim never loads it. This `__init__` imports nothing.
"""
