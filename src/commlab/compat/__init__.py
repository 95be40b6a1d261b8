"""Small shims over torch.distributed names that moved between torch releases (live layer).

Only what commlab calls itself lives here; each shim names the release that introduced the new name.
"""
from commlab.compat.torch_dist import all_gather_single, provide_new_names, reduce_scatter_single

__all__ = ["all_gather_single", "reduce_scatter_single", "provide_new_names"]
