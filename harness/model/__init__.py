"""Model access: devices and dtypes, the weights cache, loading and its checks, references to models by path or hub name,
the hooked model (stable hook names, the attention kernels) and the interventions and edits applied through
transformers' own interfaces."""
